package index

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bleveindex "github.com/blevesearch/bleve_index_api"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrCorrupt means an index exists at the path but cannot be trusted:
	// its files are damaged or unreadable, were written by another schema
	// version, or were not closed cleanly (so recent changes may be
	// missing). The caller deletes the directory and rebuilds from its log.
	ErrCorrupt = errors.New("index: corrupt or unreadable")
	// ErrOutdated means the index was written with another schema (an
	// older or newer vc-mcp): it is intact but must be rebuilt. It comes
	// wrapped together with ErrCorrupt, so callers that rebuild on
	// ErrCorrupt rebuild it too.
	ErrOutdated = errors.New("index: written with another schema")
	// ErrLocked means another process holds the index open. Do not delete it.
	ErrLocked = errors.New("index: locked by another process")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("index: closed")
	// ErrInvalidDoc is returned by Add for a document without an ID.
	ErrInvalidDoc = errors.New("index: invalid document")
)

// schemaVersion changes whenever the mapping below changes; an index with
// another version is reported as ErrCorrupt so that callers rebuild it.
const schemaVersion = "vc-mcp-index-4"

// Internal (non-document) keys. stateKey is "open" while an Index is in
// use and "closed" after a clean Close: an index found "open" was not
// closed (the process crashed), may miss recent Adds, and is reported as
// ErrCorrupt so that the caller rebuilds it.
var (
	schemaKey   = []byte("vc-mcp/schema")
	stateKey    = []byte("vc-mcp/state")
	stateOpen   = []byte("open")
	stateClosed = []byte("closed")
)

// Field names inside the Bleve documents.
const (
	fieldText         = "text"
	fieldConversation = "conversation"
	fieldKind         = "kind"
	fieldSpeaker      = "speaker"
)

// Defaults for Options.
const (
	DefaultBatchSize   = 2000
	DefaultFlushDelay  = 200 * time.Millisecond
	DefaultLockTimeout = 2 * time.Second

	// persistTimeout bounds the wait for scorch's persister, which retries
	// failed writes forever.
	persistTimeout = 2 * time.Minute
)

// Doc is one searchable unit: a turn, a segment summary or a tag summary.
type Doc struct {
	ID           string // unique; the caller chooses it, e.g. "conv/t000123"
	Conversation string // conversation id, matched exactly
	Kind         string // "turn" | "segment" | "tag", matched exactly
	Text         string // analysed English full text
	Speaker      string // matched exactly but case-insensitively
}

// Options tunes an Index. A nil *Options means defaults.
type Options struct {
	// BatchSize is the most pending changes Add and Delete buffer before
	// writing them to Bleve as one batch. Zero means DefaultBatchSize.
	BatchSize int
	// FlushDelay is how long a change may wait in the buffer for others to
	// join it. Zero means DefaultFlushDelay; negative writes every call
	// through at once.
	FlushDelay time.Duration
	// LockTimeout bounds the wait for another process's lock on the index;
	// Open then fails with ErrLocked. Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// Logger receives open/close debug messages and failed background
	// writes. Nil discards.
	Logger *slog.Logger
	// OnLost, when set, is called after a failed write dropped documents
	// that Adds had accepted; TakeLost names them. It runs on the writing
	// goroutine and must not call the Index (signal another goroutine).
	OnLost func()
}

// Index is a full-text index on disk. Its methods are safe for concurrent
// use; Close waits for running calls to finish.
type Index struct {
	mu     sync.RWMutex // Close holds it exclusively; everything else shares it
	closed bool
	bi     bleve.Index

	// The write buffer (see write.go).
	pendMu  sync.Mutex
	pending *bleve.Batch // nil when empty
	timer   *time.Timer  // pending background flush, nil if none
	pendIDs []string     // ids added to pending, for the lost list
	lost    []string     // ids of added documents a failed write dropped
	batchFn func(*bleve.Batch) error
	onLost  func()
	created bool // Open created the index (it was absent or empty)

	throttle   *throttle // spaces scorch's retries of failed writes
	path       string
	batchSize  int
	flushDelay time.Duration
	log        *slog.Logger
}

// Open opens the index at path, creating it (and missing parent
// directories) when path does not exist or is an empty directory. An
// existing directory that cannot be opened yields an error wrapping
// ErrCorrupt, or ErrLocked when another process holds it.
func Open(path string, opts *Options) (*Index, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushDelay == 0 {
		o.FlushDelay = DefaultFlushDelay
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ix := &Index{path: path, batchSize: o.BatchSize, flushDelay: o.FlushDelay, log: o.Logger, onLost: o.OnLost}

	fresh, err := isAbsentOrEmpty(path)
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w: %w", path, ErrCorrupt, err)
	}
	// Before scorch starts its goroutines: they report failures to it.
	ix.throttle = newThrottle(path, o.Logger)
	if fresh {
		ix.bi, err = create(path, o.LockTimeout, ix.throttle)
		if err != nil {
			ix.throttle.release()
			return nil, fmt.Errorf("index: create %s: %w", path, err)
		}
		o.Logger.Debug("index created", "path", path)
		ix.created = true
		ix.batchFn = ix.bi.Batch
		return ix, nil
	}
	ix.bi, err = openExisting(path, o.LockTimeout, ix.throttle)
	if err != nil {
		ix.throttle.release()
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("index: open %s: %w: %w", path, ErrLocked, err)
		}
		return nil, fmt.Errorf("index: open %s: %w: %w", path, ErrCorrupt, err)
	}
	n, _ := ix.bi.DocCount()
	o.Logger.Debug("index opened", "path", path, "docs", n)
	ix.batchFn = ix.bi.Batch
	return ix, nil
}

// Created reports whether Open created this index because none was there
// (a first start, or the directory was deleted): a caller that believed
// documents were indexed must add them again.
func (ix *Index) Created() bool { return ix.created }

func isAbsentOrEmpty(path string) (bool, error) {
	entries, err := os.ReadDir(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(entries) == 0, nil
}

// runtimeConfig is handed to scorch on create and on every open.
//
// unsafe_batch makes Add return once a batch is searchable instead of
// waiting for it to be written and fsynced. That turns a one-document Add
// from milliseconds into microseconds. A crash can lose recent batches
// (the caller rebuilds from its own log); Close persists everything.
func runtimeConfig(lockTimeout time.Duration) map[string]any {
	return map[string]any{
		"unsafe_batch":           true,
		"bolt_timeout":           lockTimeout.String(),
		"asyncErrorCallbackName": asyncErrorCallback,
	}
}

func create(path string, lockTimeout time.Duration, t *throttle) (bi bleve.Index, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	bi, err = bleve.NewUsing(path, newMapping(), scorch.Name, scorch.Name, runtimeConfig(lockTimeout))
	if err != nil {
		return nil, err
	}
	if err := ownerOnly(path); err != nil {
		return nil, errors.Join(err, bi.Close())
	}
	b := bi.NewBatch()
	b.SetInternal(schemaKey, []byte(schemaVersion))
	b.SetInternal(stateKey, stateOpen)
	if err := persist(bi, b, t); err != nil {
		return nil, errors.Join(err, closeStopped(bi, t))
	}
	return bi, nil
}

// closeStopped closes bi after ending t's waits, so that scorch's
// goroutines, which a failed write may hold in one, stop at once.
func closeStopped(bi bleve.Index, t *throttle) error {
	t.stop()
	return bi.Close()
}

func openExisting(path string, lockTimeout time.Duration, t *throttle) (bi bleve.Index, err error) {
	// Damaged segment files are parsed here; turn a panic into an error so
	// the caller can rebuild instead of crashing.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while opening: %v", r)
		}
	}()
	bi, err = bleve.OpenUsing(path, runtimeConfig(lockTimeout))
	if err != nil {
		return nil, err
	}
	if err := ownerOnly(path); err != nil {
		return nil, errors.Join(err, bi.Close())
	}
	if err := checkAndMarkOpen(bi, t); err != nil {
		return nil, errors.Join(err, closeStopped(bi, t))
	}
	return bi, nil
}

func checkAndMarkOpen(bi bleve.Index, t *throttle) error {
	v, err := bi.GetInternal(schemaKey)
	if err != nil {
		return err
	}
	if string(v) != schemaVersion {
		return fmt.Errorf("%w: schema version %q, want %q", ErrOutdated, v, schemaVersion)
	}
	if v, err = bi.GetInternal(stateKey); err != nil {
		return err
	}
	if string(v) != string(stateClosed) {
		return errors.New("not closed cleanly, recent changes may be missing")
	}
	b := bi.NewBatch()
	b.SetInternal(stateKey, stateOpen)
	return persist(bi, b, t)
}

// newMapping declares every field explicitly; nothing is dynamic, nothing
// goes into the composite _all field.
func newMapping() *mapping.IndexMappingImpl { return newMappingVectors(false) }

// newMappingVectors is the mapping, with term vectors on the text field
// when vectors is set (schema 3 had them; tests compare against it).
func newMappingVectors(vectors bool) *mapping.IndexMappingImpl {
	text := mapping.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	// The text is not stored: the caller holds it (a turn's is in its
	// master log), and Hit.Matches are byte offsets into it for Fragments.
	text.Store = false
	// No term vectors (positions and offsets, 40% of the index): phrases
	// and highlighting re-analyse the caller's text (phrase.go).
	text.IncludeTermVectors = vectors
	text.IncludeInAll = false
	text.DocValues = false

	// Nothing is stored but the document ID (Bleve's own): a hit is its
	// ID, which the caller chose and can read (schema 2 stored the
	// conversation, kind and sequence number too, a sixth of the index, for
	// callers that all know their IDs).
	kw := func() *mapping.FieldMapping {
		f := mapping.NewKeywordFieldMapping()
		f.Analyzer = keyword.Name
		f.Store = false
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}

	dm := mapping.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldText, text)
	dm.AddFieldMappingsAt(fieldConversation, kw())
	dm.AddFieldMappingsAt(fieldKind, kw())
	dm.AddFieldMappingsAt(fieldSpeaker, kw())
	dm.AddSubDocumentMapping("_all", mapping.NewDocumentDisabledMapping())

	im := mapping.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.DefaultField = fieldText
	im.ScoringModel = bleveindex.BM25Scoring
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	return im
}

// bleveDoc turns d into the map the mapping above indexes. Empty optional
// fields are left out so that they match no filter.
func bleveDoc(d Doc) map[string]any {
	m := map[string]any{
		fieldText:         strings.ToValidUTF8(d.Text, "\uFFFD"),
		fieldConversation: d.Conversation,
		fieldKind:         d.Kind,
	}
	if s := normKeyword(d.Speaker); s != "" {
		m[fieldSpeaker] = s
	}
	return m
}

func normKeyword(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// ownerOnly makes the index readable by its owner only: bleve writes
// index_meta.json 0644 (its segments are already 0600). The index holds
// conversation text.
func ownerOnly(path string) error {
	if err := os.Chmod(path, 0o700); err != nil {
		return fmt.Errorf("index permissions: %w", err)
	}
	if err := os.Chmod(filepath.Join(path, "index_meta.json"), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("index permissions: %w", err)
	}
	return nil
}
