package requestlog

// Writer is the store's history writer, one goroutine: it writes the
// queued records of each history sent to it.
type Writer struct {
	work   chan *History
	done   chan struct{}
	report func(error)
}

// StartWriter starts a history writer; report gets the errors of the
// writes of the records appended with it (their callers have answered
// already), its own and those a caller makes when the writer is busy or
// behind. Stop ends it.
func StartWriter(report func(error)) *Writer {
	w := &Writer{work: make(chan *History, 256), done: make(chan struct{}), report: report}
	go func() {
		defer close(w.done)
		for h := range w.work {
			if err := h.flushSoon(); err != nil {
				report(err)
			}
		}
	}()
	return w
}

// send hands h to the writer, unless its channel is full.
func (w *Writer) send(h *History) bool {
	select {
	case w.work <- h:
		return true
	default:
		return false
	}
}

// Stop writes what was sent and ends the writer. Nothing may be appended
// with it during or after the call. Records a failed write left queued
// stay so: the caller flushes each history a last time.
func (w *Writer) Stop() {
	close(w.work)
	<-w.done
}
