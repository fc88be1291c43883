package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressBar draws "[#####.....] 12/40 label" on one line of w, redrawn at
// most every 200 ms on a terminal; elsewhere (a log file, CI) it prints a
// plain line at most every 10 s. A nil writer makes every method a no-op.
type progressBar struct {
	w     io.Writer
	tty   bool
	total int
	n     int
	text  string
	last  time.Time
	start time.Time
	drawn bool
}

const barWidth = 30

func newProgressBar(w io.Writer, total int) *progressBar {
	return &progressBar{w: w, tty: isTerminal(w), total: total, start: time.Now()}
}

func (p *progressBar) label(s string) {
	if p.w == nil {
		return
	}
	p.text = s
	p.draw(true)
}

func (p *progressBar) add(n int) {
	if p.w == nil {
		return
	}
	p.n += n
	p.draw(p.n == p.total)
}

// warn prints a message on its own line and redraws the bar below it.
func (p *progressBar) warn(msg string) {
	if p.w == nil {
		return
	}
	if p.drawn && p.tty {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintln(p.w, msg)
	p.draw(true)
}

func (p *progressBar) draw(force bool) {
	every := 200 * time.Millisecond
	if !p.tty {
		every, force = 10*time.Second, force && p.n == p.total
	}
	if !force && time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	filled := 0
	if p.total > 0 {
		filled = min(barWidth, p.n*barWidth/p.total)
	}
	line := fmt.Sprintf("[%s%s] %d/%d %s %s", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
		p.n, p.total, time.Since(p.start).Round(time.Second), p.text)
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	fmt.Fprint(p.w, "\r\033[K"+line)
	p.drawn = true
}

func (p *progressBar) done() {
	if p.w == nil {
		return
	}
	if !p.tty {
		if p.n > 0 && p.n < p.total {
			p.last = time.Time{}
			p.draw(false)
		}
		return
	}
	if !p.drawn {
		return
	}
	p.draw(true)
	fmt.Fprintln(p.w)
	p.drawn = false
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
