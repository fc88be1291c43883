package memory

// Lock order. Every path that holds more than one of these takes them in
// this order, and never the other way round:
//
//	Store.mu          the conversation table and the operation count; held
//	                  only to look up or change them, never across I/O or
//	                  while waiting for anything
//	conv.compactMu    serialises a conversation's compactions, splits and
//	                  summary regeneration
//	conv.wmu          serialises a conversation's writers, across their I/O
//	conv.mu           a conversation's in-memory state against its readers:
//	                  the frequent writers hold it (with wmu) only to change
//	                  the state once their I/O is done, so a recall does not
//	                  wait for their fsync (state.go)
//	masterlog.Log.mu  a log's file handle (held for one read or append)
//	bbolt transaction db.Update / db.View
//
// So no code takes conv.mu inside a bbolt transaction (Close copies each
// header under conv.mu, then commits them all), and nothing takes Store.mu
// while it holds conv.mu.
//
// Operations. Each exported method begins an operation (Store.begin):
// once Close has begun, new ones fail with ErrClosed; Close waits for the
// ones in flight, then saves and closes. A writing operation pins the
// conversations it loads, so the table's LRU never unloads a conversation
// while it is being written.

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vc-mcp/vc-mcp/index"
	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/requestlog"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
	"github.com/vc-mcp/vc-mcp/memory/vcdb"
	bolt "go.etcd.io/bbolt"
)

// File names inside a data directory.
const (
	dbFile     = "vc.db"
	indexDir   = "index.bleve"
	logsDir    = "logs"
	holderFile = "holder.json"
	logExt     = ".jsonl"
)

// textIndex is what the store needs of a full-text index.
type textIndex interface {
	Add(ctx context.Context, docs []index.Doc) error
	Delete(ctx context.Context, ids []string) error
	Search(ctx context.Context, q index.Query) ([]index.Hit, error)
	// OnlyIn reports whether the index holds only these conversations'
	// documents (a search that checks its hits may then drop its filters).
	OnlyIn(conversations []string) bool
	Close() error
}

var _ textIndex = (*index.Index)(nil)

// Store is a data directory's memory: master logs, the bbolt store and the
// Bleve index. It is safe for concurrent use. One process at a time may open
// a data directory.
type Store struct {
	opts   Options
	db     vcdb.DB
	ix     textIndex
	tok    *tokens.Counter
	tagger Tagger
	sum    Summarizer
	// ext is the extractive summariser that replays topic summaries
	// recorded by reference (rollupref.go); sum is ext when none is given.
	ext *summarize.Extractive
	log *slog.Logger
	now func() time.Time

	set *settingsBox // settings that change at run time (settings.go)

	// prefixCache holds the tokens of the speaker prefixes of turns
	// without a speaker slot (conv.speakerToks holds the rest), by name.
	prefixCache sync.Map

	// mu guards convs, lru, ops and closing (see the lock order above).
	mu      sync.Mutex
	convs   map[string]*convEntry
	lru     *list.List // of *convEntry, most recently used in front
	ops     int        // operations in flight
	idle    *sync.Cond // signalled when ops drops to 0
	closing bool
	closed  atomic.Bool
	watch   watchers // Watch channels (events.go)

	rec reconciler // catches the derived stores up (reconcile.go)

	// reqMarked: the request histories are marked in use by this store
	// (requestlog.Begin); reqCrashes: how many processes before it, in a
	// row, crashed with them marked. Set at Open.
	reqMarked  bool
	reqCrashes int

	// ro is set when the store serves a snapshot of a data directory it
	// may not write (readonly.go).
	ro *readOnly

	// purgeAtClose: something was forgotten or redacted, so Close scrubs
	// vc.db (bbolt keeps freed pages' old bytes: vcdb.DB.Scrub) and
	// deletes the index (rebuilt from the logs on the next Open).
	purgeAtClose atomic.Bool
	purging      atomic.Bool // an index purge is running
	// logRewrites counts the rewrites of any conversation's logs (forget,
	// redaction, expiry), each bumped before its request history is
	// scrubbed: a recall that began before one does not record what it
	// saw (requests.go).
	logRewrites atomic.Uint64

	// Per-tag expiry (ttl.go); nil without Options.TagTTL.
	stopTTL context.CancelFunc
	ttlDone chan struct{}
	shared  *sharedState // nil unless Options.Shared (shared.go)

	// Background embedding (semantic memory); nil channels without an Embedder.
	kick      chan struct{}
	embedDone chan struct{}
	stopEmbed context.CancelFunc

	// Context items (items.go): the catalogue, its cached chunk vectors
	// and each conversation's request history (conversation id ->
	// *requestlog.History).
	items    *catalogue
	itemVecs itemVectors
	reqs     sync.Map
	reqw     *requestlog.Writer // nil before Open's end and after Close
	warm     *lineWarmer        // nil before Open's end
	warmDone chan struct{}      // closed when warmStart's loads end; nil without
}

// holder identifies the process that holds a data directory.
type holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

func (o *Options) setDefaults() {
	if o.DefaultConversation == "" {
		o.DefaultConversation = "default"
	}
	if o.ContextWindow <= 0 {
		o.ContextWindow = 120000
	}
	if o.SoftThreshold <= 0 || o.SoftThreshold >= 1 {
		o.SoftThreshold = 0.70
	}
	if o.HardThreshold <= 0 || o.HardThreshold >= 1 || o.HardThreshold < o.SoftThreshold {
		o.HardThreshold = 0.85
		if o.HardThreshold < o.SoftThreshold {
			o.HardThreshold = o.SoftThreshold
		}
	}
	if o.ProtectedTurns <= 0 {
		o.ProtectedTurns = 6
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1 << 20
	}
	if o.SplitMinTurns <= 0 {
		o.SplitMinTurns = splitMinTurns
	}
	if o.SplitMaxShare <= 0 || o.SplitMaxShare >= 1 {
		o.SplitMaxShare = splitMaxShare
	}
	if o.MaxSplitsPerTurn <= 0 {
		o.MaxSplitsPerTurn = 1
	}
	if o.Replacement.KeepLast <= 0 {
		o.Replacement.KeepLast = DefaultKeepLast
	}
	if o.HintStyle == "" {
		o.HintStyle = HintAuto
	}
	if o.SummaryConcurrency <= 0 {
		o.SummaryConcurrency = 4
	}
	if o.MaxOpenConversations <= 0 {
		o.MaxOpenConversations = defaultMaxOpenConversations
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TTLInterval <= 0 {
		o.TTLInterval = time.Hour
	}
}

// Open opens (creating if needed) the data directory opts.Dir. It fails fast
// with an error wrapping ErrLocked, naming the holder, when another process
// has it open. Turns found in the master logs but missing from the derived
// stores (after a crash, or when they were deleted) are replayed.
//
// A data directory this process may not write (NotWritable), or any with
// Options.ReadOnly, is served from a private snapshot (see readOnly): reads
// answer, and calls that would write fail with ErrReadOnly.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts.setDefaults()
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: no data directory given", ErrInvalid)
	}
	var why error
	if !opts.ReadOnly {
		// Asked for, it is not checked: on Windows the check writes.
		if why = NotWritable(opts.Dir); why == nil {
			return open(ctx, opts, nil)
		}
	}
	if opts.Shared != nil {
		if why != nil {
			return nil, fmt.Errorf("the cache directory %s of the shared store cannot be written: %w", opts.Dir, why)
		}
		return nil, fmt.Errorf("%w: a shared store (--store) cannot be served read-only", ErrInvalid)
	}
	scratch, lock, err := snapshotDir(opts.Dir, opts.LockTimeout, opts.Logger)
	if err != nil {
		return nil, err
	}
	ro := &readOnly{dir: opts.Dir, scratch: scratch, lock: lock, reason: why}
	opts.Dir = scratch
	opts.TagTTL = nil // expiry forgets: a write
	reason := "asked for"
	if why != nil {
		reason = why.Error()
	}
	opts.Logger.Warn("serving the data directory read-only, from a snapshot; calls that would store or forget are refused",
		"data_dir", ro.dir, "reason", reason, "snapshot", scratch)
	s, err := open(ctx, opts, ro)
	if err != nil {
		return nil, errors.Join(err, ro.removeSnapshot())
	}
	return s, nil
}

// open opens opts.Dir; ro is set when that is a read-only directory's
// snapshot.
func open(ctx context.Context, opts Options, ro *readOnly) (*Store, error) {
	if err := ValidateConversationID(opts.DefaultConversation); err != nil {
		return nil, fmt.Errorf("default conversation: %w", err)
	}
	switch opts.Assembly {
	case "", AssemblyRelevance, AssemblyHierarchical:
	default:
		return nil, fmt.Errorf("%w: assembly %q: want %q or %q", ErrInvalid, opts.Assembly, AssemblyRelevance, AssemblyHierarchical)
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, logsDir), 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	tok := tokens.Cl100k()
	cat, err := newCatalogue(opts.ContextItems, opts.ContextSearch, tok.Count)
	if err != nil {
		return nil, fmt.Errorf("context items: %w", err)
	}
	dbPath := filepath.Join(opts.Dir, dbFile)
	db, err := openDB(dbPath, opts)
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, lockedError(opts.Dir)
		}
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	s := &Store{opts: opts, ro: ro, tok: tok, tagger: opts.Tagger, sum: opts.Summarizer,
		log: opts.Logger, now: opts.Now, convs: map[string]*convEntry{}, lru: list.New()}
	s.db = vcdb.DB{DB: db, Damaged: damagedPage(s.dataDir(), ro != nil, opts.Logger)}
	s.idle = sync.NewCond(&s.mu)
	s.items = cat
	s.itemVecs = itemVectors{dir: filepath.Join(opts.Dir, filepath.FromSlash(itemVectorsDir)), mem: map[string][]float32{}}
	s.set = newSettingsBox(opts.Dir, opts.settings())
	if err := s.set.base.Validate(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := s.set.load(); err != nil {
		s.log.Warn("run-time settings not applied", "err", err)
	}
	if opts.Shared != nil {
		s.shared = &sharedState{logs: opts.Shared, files: map[string]*sync.Mutex{}}
	}
	if s.tagger == nil {
		s.tagger = tagging.NewKeyword(opts.KeywordTagging)
	}
	s.ext = summarize.NewExtractive(&summarize.ExtractiveOptions{Count: tok.Count})
	if s.sum == nil {
		s.sum = s.ext
	}
	fail := func(err error) (*Store, error) {
		if s.ix != nil {
			_ = s.ix.Close()
		}
		_ = db.Close()
		return nil, err
	}
	if err := writeHolder(opts.Dir); err != nil {
		// Only what a second process is told; the lock is held all the
		// same. A full disk must not keep the store from serving reads.
		_ = os.Remove(filepath.Join(opts.Dir, holderFile)) // a stale one would name another process
		opts.Logger.Warn("could not record this process in holder.json; another vc-mcp on this data directory will not be told which process holds it", "err", err)
	}
	if s.shared != nil {
		if err := s.prepareShared(ctx, func() error {
			if err := s.db.Close(); err != nil {
				return err
			}
			if err := os.Remove(dbPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("empty the cache: %w", err)
			}
			if err := removeCache(opts.Dir); err != nil {
				return err
			}
			ndb, err := openDB(dbPath, opts)
			if err != nil {
				return fmt.Errorf("reopen %s: %w", dbPath, err)
			}
			s.db.DB, db = ndb, ndb
			return nil
		}); err != nil {
			return fail(err)
		}
	}
	if err := s.initSchema(); err != nil {
		return fail(err)
	}
	ixPath := filepath.Join(opts.Dir, indexDir)
	ixOpts := &index.Options{OnLost: s.kickReconciler}
	ix, err := index.Open(ixPath, ixOpts)
	if errors.Is(err, index.ErrLocked) {
		return fail(lockedError(opts.Dir))
	}
	if err != nil {
		// The index is derived: rebuild it rather than refuse to start.
		if errors.Is(err, index.ErrOutdated) {
			s.log.Info("full-text index written by another vc-mcp version; rebuilding it from the master logs in the background", "path", ixPath, "detail", err)
		} else {
			s.log.Warn("full-text index unreadable; rebuilding it from the master logs", "path", ixPath, "err", err)
		}
		if rmErr := os.RemoveAll(ixPath); rmErr != nil {
			return fail(fmt.Errorf("remove broken index: %w", rmErr))
		}
		if ix, err = index.Open(ixPath, ixOpts); err != nil {
			return fail(fmt.Errorf("open index: %w", err))
		}
	}
	if ix.Created() {
		// New, or deleted by hand: whatever the watermarks say, it is empty.
		if err := s.resetIndexed(); err != nil {
			_ = ix.Close()
			return fail(err)
		}
	}
	s.ix = ix
	if err := migrateFileNames(opts.Dir, s.log); err != nil {
		return fail(err)
	}
	s.markRequests() // before the line warmer opens a history
	s.startLineWarmer()
	if err := s.recover(ctx); err != nil {
		s.stopLineWarmer()
		return fail(err)
	}
	s.startReconciler()
	s.startRequestWriter()
	s.startTTL()
	if n := min(s.opts.WarmConversations, s.opts.MaxOpenConversations); n > 0 {
		s.warmStart(n)
	}
	if opts.Embedder != nil {
		ectx, cancel := context.WithCancel(context.Background())
		s.kick, s.embedDone, s.stopEmbed = make(chan struct{}, 1), make(chan struct{}), cancel
		go s.embedLoop(ectx)
		s.kickEmbedder()
	}
	return s, nil
}

// initSchema creates the top-level buckets and checks the schema version.
func (s *Store) initSchema() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketConvs, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keySchema); v != nil && string(v) != schemaVersion {
			return fmt.Errorf("data directory schema %q is not %q: run `vc-mcp rebuild`", v, schemaVersion)
		}
		return meta.Put(keySchema, []byte(schemaVersion))
	})
	if err != nil {
		return fmt.Errorf("initialise store: %w", err)
	}
	return nil
}

// convFileExts are the files a conversation has: by sub-directory, the
// extensions of its files there, each named fileName(id)+ext (convFile).
var convFileExts = map[string][]string{
	logsDir:       {logExt, ".gen"},
	decisionsDir:  {decisionsExt},
	quarantineDir: {logExt},
	requestsDir:   {requestlog.Ext, requestlog.PlainExt, requestlog.MarkerExt},
}

// migrateFileNames renames the files of conversations named before their
// names were made safe (upper-case letters, Windows' device names, a
// trailing dot: see fileName). Each file is renamed on its own, so a
// start that a crash cut short in the middle is finished by the next.
// Each directory is read once.
func migrateFileNames(dataDir string, log *slog.Logger) error {
	for sub, exts := range convFileExts {
		dir := filepath.Join(dataDir, sub)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", sub, err)
		}
		renamed := false
		for _, e := range entries {
			name := e.Name()
			for _, ext := range exts {
				base, ok := strings.CutSuffix(name, ext)
				if e.IsDir() || !ok || base == "" {
					continue
				}
				id := idFromFileName(base)
				want := fileName(id) + ext
				if want == name || ValidateConversationID(id) != nil {
					break
				}
				if _, err := os.Lstat(filepath.Join(dir, want)); err == nil {
					log.Warn("a conversation file has an old-style name and its new name is taken; left as it is", "file", filepath.Join(sub, name), "new_name", want)
					break
				}
				if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, want)); err != nil {
					return fmt.Errorf("rename %s to %s: %w", filepath.Join(sub, name), want, err)
				}
				log.Info("conversation file renamed to its safe name", "from", filepath.Join(sub, name), "to", want)
				renamed = true
				break
			}
		}
		if renamed {
			if err := files.SyncDir(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// resetIndexed marks every conversation as not indexed, so recover re-adds
// all turns to a new index.
func (s *Store) resetIndexed() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketConvs)
		var metas []convMeta
		if err := b.ForEach(func(k, v []byte) error {
			var m convMeta
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			m.IndexedThrough, m.SummariesIndexed = 0, -1
			metas = append(metas, m)
			return nil
		}); err != nil {
			return fmt.Errorf("reset index watermarks: %w", err)
		}
		for _, m := range metas {
			if err := putMeta(tx, m); err != nil {
				return err
			}
		}
		return nil
	})
}

func lockedError(dir string) error {
	msg := fmt.Sprintf("%s is in use by another vc-mcp process", dir)
	if data, err := os.ReadFile(filepath.Join(dir, holderFile)); err == nil {
		var h holder
		if json.Unmarshal(data, &h) == nil && h.PID > 0 {
			msg = fmt.Sprintf("%s is in use by pid %d (%s) on %s, started %s", dir, h.PID, h.Command, h.Host, h.Started.Format(time.RFC3339))
		}
	}
	return fmt.Errorf("%w: %s; stop that process, or give this one another --data-dir (sharing one store between clients: run one `vc-mcp serve --http` and point every client at it)", ErrLocked, msg)
}

func writeHolder(dir string) error {
	host, _ := os.Hostname()
	h := holder{PID: os.Getpid(), Command: strings.Join(os.Args, " "), Host: host, Started: time.Now().UTC()}
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return files.AtomicWrite(filepath.Join(dir, holderFile), data)
}

// Close refuses new operations (they get ErrClosed), waits for the ones in
// flight, saves every loaded conversation's header and releases the data
// directory. It is safe to call more than once and concurrently with any
// operation.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.closed.Store(true)
	s.mu.Unlock()
	if s.stopEmbed != nil {
		s.stopEmbed()
		<-s.embedDone
	}
	s.stopReconciler()
	if s.warmDone != nil {
		<-s.warmDone // it stops at the next conversation
	}
	s.stopLineWarmer()
	if s.stopTTL != nil {
		s.stopTTL()
		<-s.ttlDone
	}
	s.mu.Lock()
	for s.ops > 0 {
		s.idle.Wait()
	}
	entries := s.convs
	s.convs = map[string]*convEntry{}
	s.lru.Init()
	s.mu.Unlock()
	s.closeWatchers() // no operation is left to publish a change
	s.stopRequestWriter()

	var errs []error
	var convs []*conv
	var metas []convMeta
	for _, e := range entries {
		<-e.ready // loads are part of operations: all done
		if e.c == nil {
			continue
		}
		e.c.mu.RLock()
		metas = append(metas, e.c.meta)
		e.c.mu.RUnlock()
		convs = append(convs, e.c)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for _, m := range metas {
			if err := putMeta(tx, m); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		errs = append(errs, fmt.Errorf("save state: %w", err))
	}
	for _, c := range convs {
		if err := c.log.Close(); err != nil {
			errs = append(errs, err)
		}
		if c.dlog != nil {
			if err := c.dlog.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := s.ix.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close index: %w", err))
	} else if s.purgeAtClose.Load() {
		// Bleve keeps deleted documents in older segment files: after a
		// forget the index goes, and the next Open rebuilds it from the logs.
		if err := os.RemoveAll(filepath.Join(s.opts.Dir, indexDir)); err != nil {
			errs = append(errs, fmt.Errorf("remove the index after forget: %w", err))
		}
	}
	// After a forget no free page of vc.db may keep a forgotten message:
	// it is compacted in place whatever that saves, under its lock, so a
	// process waiting for the lock gets this file (vcdb.DB.Scrub); where
	// that cannot be, it is rewritten once closed (vcdb.Rewrite).
	purge, rewrite := s.ro == nil && s.purgeAtClose.Load(), false
	if s.ro == nil {
		if purge {
			scrubbed, err := s.db.Scrub()
			if err != nil {
				errs = append(errs, fmt.Errorf("scrub vc.db after forget: %w", err))
			}
			rewrite = err == nil && !scrubbed
		} else if _, err := s.db.Compact(); err != nil {
			s.log.Warn("could not compact vc.db; it keeps its free pages", "err", err)
		}
		if err := s.db.Trim(); err != nil {
			s.log.Warn("could not cut vc.db down to its pages; it stays as large as it grew", "err", err)
		}
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	} else if rewrite {
		if err := vcdb.Rewrite(filepath.Join(s.opts.Dir, dbFile)); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(filepath.Join(s.opts.Dir, holderFile))
	if s.shared != nil {
		if err := s.shared.logs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the shared store: %w", err))
		}
	}
	if s.ro != nil {
		if err := s.ro.removeSnapshot(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dataDir is the data directory as its users know it: Options.Dir, or the
// read-only directory a snapshot was taken of.
func (s *Store) dataDir() string {
	if s.ro != nil {
		return s.ro.dir
	}
	return s.opts.Dir
}

func (s *Store) logPath(id string) string {
	return convFile(s.opts.Dir, logsDir, id, logExt)
}

// resolve validates a conversation id, mapping "" to the default.
func (s *Store) resolve(id string) (string, error) {
	if id == "" {
		return s.opts.DefaultConversation, nil
	}
	if err := ValidateConversationID(id); err != nil {
		return "", err
	}
	return id, nil
}

// recover brings every conversation's derived state up to its master log:
// conversations whose logs are longer than the store knows are replayed,
// and turns missing from the index (a new index, after a crash) are added.
func (s *Store) recover(ctx context.Context) error {
	entries, err := os.ReadDir(filepath.Join(s.opts.Dir, logsDir))
	if err != nil {
		return fmt.Errorf("list master logs: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, logExt) {
			continue
		}
		id := idFromFileName(strings.TrimSuffix(name, logExt))
		if ValidateConversationID(id) != nil {
			s.log.Warn("ignoring master log with an invalid conversation id", "file", name)
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("stat %s: %w", name, err)
		}
		var meta convMeta
		var decodeErr error
		if err := s.db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketConvs).Get([]byte(id)); v != nil {
				decodeErr = json.Unmarshal(v, &meta)
				return decodeErr
			}
			return nil
		}); err != nil && decodeErr == nil && !errors.Is(err, errDamagedDB) {
			return fmt.Errorf("read conversation %s: %w", id, err)
		} else if err != nil {
			// Damage in vc.db costs this conversation, not the start: its
			// calls say to run the rebuild, the others are served.
			s.log.Error("vc.db: a conversation's record is damaged; its calls will say to run vc-mcp rebuild", "conversation", id, "err", err)
			continue
		}
		// A conversation only behind in the index is left to the reconciler.
		if info.Size() == meta.LogSize && !s.decisionsBehind(id, meta) {
			continue
		}
		if _, err := s.conversation(ctx, id, true); errors.Is(err, errDamagedDB) {
			s.log.Error("vc.db: a conversation's record is damaged; its calls will say to run vc-mcp rebuild", "conversation", id, "err", err)
		} else if err != nil {
			return fmt.Errorf("recover conversation %s: %w", id, err)
		}
	}
	return nil
}

// conversationIDs lists every conversation with a master log, sorted.
func (s *Store) conversationIDs() ([]string, error) {
	if s.shared != nil {
		s.pullAll()
	}
	entries, err := os.ReadDir(filepath.Join(s.opts.Dir, logsDir))
	if err != nil {
		return nil, fmt.Errorf("list master logs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, logExt) {
			continue
		}
		id := idFromFileName(strings.TrimSuffix(name, logExt))
		if ValidateConversationID(id) == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Rebuildable says why Rebuild cannot run on opts.Dir (it is read-only),
// or returns nil.
func Rebuildable(opts Options) error {
	if why := NotWritable(opts.Dir); why != nil {
		return &readOnlyError{fmt.Sprintf("rebuild remakes vc.db and the index inside %s, which this user may not do (%v): make it writable by the user running vc-mcp, or rebuild a copy of it", opts.Dir, why)}
	}
	if opts.ReadOnly {
		return fmt.Errorf("%w: rebuild writes vc.db and the index inside %s: it cannot run read-only", ErrInvalid, opts.Dir)
	}
	return nil
}

// Rebuild deletes the derived bbolt file and Bleve index of opts.Dir and
// recreates them from the master logs and the derived-decisions logs:
// tags, segments, summaries, splits, aliases and the working set come back
// as they were, and no tagger, summariser or splitter is called for
// anything recorded. The directory must not be open.
func Rebuild(ctx context.Context, opts Options, progress Progress) error {
	opts.setDefaults()
	if opts.Dir == "" {
		return fmt.Errorf("%w: no data directory given", ErrInvalid)
	}
	if err := Rebuildable(opts); err != nil {
		return err
	}
	dbPath := filepath.Join(opts.Dir, dbFile)
	committed, err := lockForRebuild(dbPath, opts)
	if err != nil {
		return err
	}
	// The turns the old vc.db committed outlive it: a turn whose record
	// is gone from the log (cut short, damaged) stays a damaged
	// placeholder, as a start would keep it, and its id is never given
	// again.
	opts.turnFloor = committed
	for _, p := range []string{dbPath, dbPath + vcdb.CompactingSuffix, dbPath + vcdb.CompactedSuffix, filepath.Join(opts.Dir, indexDir)} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	s, err := Open(ctx, opts)
	if err != nil {
		return err
	}
	if err := s.WaitIndexed(ctx); err != nil {
		return errors.Join(fmt.Errorf("rebuild the index: %w", err), s.Close())
	}
	if progress != nil {
		ids, _ := s.conversationIDs()
		progress(len(ids), len(ids), "rebuilt")
	}
	return s.Close()
}

// lockForRebuild makes sure no process uses the vc.db at path before
// Rebuild deletes it: bbolt's lock is taken (and let go) as an open for
// writing takes it, after a compaction a crash cut short is finished. A
// vc.db bbolt cannot use (damaged, cut short) passes: no process can have
// it open, since every open of it fails as this one does; rebuilding is
// its repair. It returns how many turns each conversation had committed,
// as far as vc.db can still say.
func lockForRebuild(path string, opts Options) (map[string]int, error) {
	switch err := vcdb.FinishCompaction(path); {
	case vcdb.IsDamaged(err):
		// Rebuild removes vc.db and its compacted copy alike.
		opts.Logger.Warn("a compaction of vc.db was cut short and its copy is damaged; rebuilding vc.db from the logs", "data_dir", opts.Dir, "err", err)
	case err != nil:
		return nil, err
	}
	var committed map[string]int
	db, err := vcdb.Open(path, &bolt.Options{Timeout: opts.LockTimeout}, damagedPage(opts.Dir, false, opts.Logger))
	if err == nil {
		committed = committedTurns(db, opts.Logger)
		err = db.Close()
	}
	switch {
	case err == nil:
		return committed, nil
	case vcdb.IsDamaged(err):
		opts.Logger.Warn("vc.db is damaged; rebuilding it from the logs", "data_dir", opts.Dir, "err", err)
		return committed, nil
	case errors.Is(err, bolt.ErrTimeout):
		return nil, lockedError(opts.Dir)
	default:
		return nil, fmt.Errorf("open store: %w", err)
	}
}

// committedTurns reads each conversation's committed turn count from db,
// skipping what cannot be read (a damaged vc.db is what a rebuild
// repairs).
func committedTurns(db *bolt.DB, log *slog.Logger) map[string]int {
	out := map[string]int{}
	err := (vcdb.DB{DB: db}).View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketConvs)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var m convMeta
			if json.Unmarshal(v, &m) == nil && m.Turns > 0 {
				out[string(k)] = m.Turns
			}
			return nil
		})
	})
	if err != nil {
		log.Warn("vc.db's turn counts could not all be read; turns missing from the logs may not be kept as placeholders", "err", err)
	}
	return out
}

// kickEmbedder wakes the background embedder, if there is one.
func (s *Store) kickEmbedder() {
	if s.kick == nil {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// openDB opens vc.db with the store's options. A file bbolt cannot use
// (not a bbolt file, a damaged meta page, cut short) is a damaged vc.db,
// with the repair in its message.
func openDB(path string, opts Options) (*bolt.DB, error) {
	if err := vcdb.FinishCompaction(path); err != nil {
		if vcdb.IsDamaged(err) {
			return nil, damagedDB(opts.Dir, false, err)
		}
		return nil, err
	}
	db, err := vcdb.Open(path, &bolt.Options{Timeout: opts.LockTimeout, NoSync: opts.noSync}, damagedPage(opts.Dir, false, opts.Logger))
	if vcdb.IsDamaged(err) {
		return nil, damagedDB(opts.Dir, false, err)
	}
	return db, err
}
