package embed

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub serves one repository the way the Hugging Face hub does: the
// revision API, resolve URLs with ETag (git sha1) for small files and a 302
// to a CDN URL with X-Linked-Size / X-Linked-Etag (sha256) for LFS files.
type fakeHub struct {
	repo   string
	commit string
	files  map[string][]byte
	lfs    map[string]bool

	mu          sync.Mutex
	cutNext     int  // cut this many LFS bodies after half the bytes
	corrupt     bool // serve LFS bodies with one byte flipped
	ignoreRange bool // answer range requests with the whole file
	blobGets    int  // LFS GETs served
	rangeGets   []string
	byMain      int // resolve requests by branch rather than commit
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{repo: "org/tiny", commit: strings.Repeat("c0ffee", 6) + "abcd", files: map[string][]byte{},
		lfs: map[string]bool{"pytorch_model.bin": true}}
	for _, name := range []string{"config.json", "vocab.txt", "tokenizer_config.json", "pytorch_model.bin"} {
		b, err := os.ReadFile(filepath.Join(tinyDir, name))
		if err != nil {
			t.Fatal(err)
		}
		h.files[name] = b
	}
	return h
}

func gitSHA(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/api/models/"+h.repo+"/revision/main":
		type lfs struct {
			SHA256 string `json:"sha256"`
			Size   int    `json:"size"`
		}
		type sib struct {
			Name string `json:"rfilename"`
			Size int    `json:"size"`
			LFS  *lfs   `json:"lfs,omitempty"`
		}
		var sibs []sib
		for name, b := range h.files {
			s := sib{Name: name, Size: len(b)}
			if h.lfs[name] {
				s.LFS = &lfs{SHA256: sha256Hex(b), Size: len(b)}
			}
			sibs = append(sibs, s)
		}
		json.NewEncoder(w).Encode(map[string]any{"id": h.repo, "sha": h.commit, "siblings": sibs})
	case strings.HasPrefix(p, "/"+h.repo+"/resolve/main/") || strings.HasPrefix(p, "/"+h.repo+"/resolve/"+h.commit+"/"):
		name := p[strings.LastIndex(p, "/")+1:]
		h.mu.Lock()
		h.byMain += strings.Count(p, "/resolve/main/")
		h.mu.Unlock()
		b, ok := h.files[name]
		if !ok {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", h.commit)
		if h.lfs[name] {
			w.Header().Set("X-Linked-Size", fmt.Sprint(len(b)))
			w.Header().Set("X-Linked-Etag", `"`+sha256Hex(b)+`"`)
			w.Header().Set("ETag", `"`+sha256Hex(b)+`"`)
			http.Redirect(w, r, "/cdn/"+sha256Hex(b)+"?name="+name, http.StatusFound)
			return
		}
		w.Header().Set("ETag", `"`+gitSHA(b)+`"`)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	case strings.HasPrefix(p, "/old/tiny/resolve/"):
		// A renamed repository: the hub redirects relative to itself.
		http.Redirect(w, r, strings.Replace(p, "/old/tiny/", "/"+h.repo+"/", 1), http.StatusTemporaryRedirect)
	case strings.HasPrefix(p, "/cdn/"):
		name := r.URL.Query().Get("name")
		b := h.files[name]
		h.mu.Lock()
		if r.Method == http.MethodGet {
			h.blobGets++
			if rg := r.Header.Get("Range"); rg != "" {
				h.rangeGets = append(h.rangeGets, rg)
			}
		}
		cut := r.Method == http.MethodGet && h.cutNext > 0
		if cut {
			h.cutNext--
		}
		corrupt, ignoreRange := h.corrupt, h.ignoreRange
		h.mu.Unlock()
		if corrupt {
			b = bytes.Clone(b)
			b[len(b)/3] ^= 0xff
		}
		if ignoreRange {
			r.Header.Del("Range")
		}
		if cut {
			// Announce the whole body, send half of it, drop the connection.
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.WriteHeader(http.StatusOK)
			w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	default:
		http.NotFound(w, r)
	}
}

func TestPull(t *testing.T) {
	tests := []struct {
		name        string
		cut         int
		ignoreRange bool
		wantSource  string
		wantRanges  int
	}{
		{"clean", 0, false, "download", 0},
		{"interrupted then resumed", 1, false, "resumed", 1},
		{"interrupted twice, server ignores ranges", 2, true, "download", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := newFakeHub(t)
			hub.cutNext, hub.ignoreRange = tt.cut, tt.ignoreRange
			srv := httptest.NewServer(hub)
			defer srv.Close()
			t.Setenv("HF_ENDPOINT", srv.URL) // the override under test
			t.Setenv("HF_HUB_CACHE", t.TempDir())
			dir := filepath.Join(t.TempDir(), "model")
			var progress bytes.Buffer
			res, err := Pull(context.Background(), PullOptions{Repo: hub.repo, Dir: dir, Progress: &progress})
			if err != nil {
				t.Fatalf("Pull: %v\nprogress:\n%s", err, progress.String())
			}
			if res.Commit != hub.commit {
				t.Errorf("got commit %q, want %q", res.Commit, hub.commit)
			}
			if hub.byMain != 0 {
				t.Errorf("got %d requests by branch, want every file pinned to the commit", hub.byMain)
			}
			sources := map[string]string{}
			for _, f := range res.Files {
				sources[f.Name] = f.Source
			}
			if got := sources["pytorch_model.bin"]; got != tt.wantSource {
				t.Errorf("got pytorch_model.bin source %q, want %q", got, tt.wantSource)
			}
			if got := len(hub.rangeGets); got != tt.wantRanges {
				t.Errorf("got %d range requests %v, want %d", got, hub.rangeGets, tt.wantRanges)
			}
			for name, want := range hub.files {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: got %d bytes (err %v), want the hub's %d", name, len(got), err, len(want))
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".partial")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("got a leftover .partial dir (err %v), want it removed", err)
			}
			if !strings.Contains(progress.String(), "pytorch_model.bin:") {
				t.Errorf("got progress %q, want per-file progress", progress.String())
			}
			if _, err := Load(context.Background(), dir, nil); err != nil {
				t.Errorf("Load after Pull: %v", err)
			}
			// A second pull verifies and downloads nothing.
			gets := hub.blobGets
			res, err = Pull(context.Background(), PullOptions{Repo: hub.repo, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Files {
				if f.Source != "present" {
					t.Errorf("second pull: got %s source %q, want present", f.Name, f.Source)
				}
			}
			if hub.blobGets != gets {
				t.Errorf("second pull: got %d blob downloads, want 0", hub.blobGets-gets)
			}
		})
	}
}

func TestPullChecksumMismatch(t *testing.T) {
	hub := newFakeHub(t)
	hub.corrupt = true
	srv := httptest.NewServer(hub)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "model")
	_, err := Pull(context.Background(), PullOptions{Repo: hub.repo, Dir: dir, Endpoint: srv.URL, HubCache: t.TempDir()})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want ErrChecksum", err)
	}
	for _, name := range []string{"pytorch_model.bin", "config.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: got it placed (err %v), want nothing placed after a bad checksum", name, err)
		}
	}
	ok, reason := func() (bool, string) {
		l := NewLazy(dir, nil)
		l.Start(context.Background())
		l.Wait(context.Background())
		return l.Ready()
	}()
	if ok || !strings.Contains(reason, "no model at") {
		t.Errorf("got ready=%v %q, want not ready with a 'no model at' reason", ok, reason)
	}
}

func TestPullMissingRepo(t *testing.T) {
	hub := newFakeHub(t)
	srv := httptest.NewServer(hub)
	defer srv.Close()
	_, err := Pull(context.Background(), PullOptions{Repo: "org/absent", Dir: t.TempDir(), Endpoint: srv.URL, HubCache: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("got %v, want a not-found error naming the API's 404", err)
	}
}

// A mirror that serves files but not the API still works, with the
// checksums from the resolve headers alone.
func TestPullWithoutAPI(t *testing.T) {
	hub := newFakeHub(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", http.NotFound)
	mux.Handle("/", hub)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	res, err := Pull(context.Background(), PullOptions{Repo: hub.repo, Dir: dir, Endpoint: srv.URL, HubCache: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != hub.commit {
		t.Errorf("got commit %q, want %q from X-Repo-Commit", res.Commit, hub.commit)
	}
	if _, err := Load(context.Background(), dir, nil); err != nil {
		t.Errorf("Load after Pull: %v", err)
	}
}

func TestPullReusesHubCache(t *testing.T) {
	hub := newFakeHub(t)
	srv := httptest.NewServer(hub)
	defer srv.Close()
	cache := t.TempDir()
	snap := filepath.Join(cache, "models--org--tiny", "snapshots", hub.commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "pytorch_model.bin"), hub.files["pytorch_model.bin"], 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_CACHE", cache)
	res, err := Pull(context.Background(), PullOptions{Repo: hub.repo, Dir: t.TempDir(), Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if hub.blobGets != 0 {
		t.Errorf("got %d blob downloads, want 0 (the cache had the file)", hub.blobGets)
	}
	if res.Files[0].Name != "pytorch_model.bin" || res.Files[0].Source != "hub-cache" {
		t.Errorf("got %+v, want pytorch_model.bin from hub-cache", res.Files[0])
	}
}

func TestPullRenamedRepo(t *testing.T) {
	hub := newFakeHub(t)
	srv := httptest.NewServer(hub)
	defer srv.Close()
	dir := t.TempDir()
	res, err := Pull(context.Background(), PullOptions{Repo: "old/tiny", Dir: dir, Endpoint: srv.URL, HubCache: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Name == "config.json" && f.Size != int64(len(hub.files["config.json"])) {
			t.Errorf("got config.json size %d, want %d from the redirected metadata", f.Size, len(hub.files["config.json"]))
		}
	}
	if _, err := Load(context.Background(), dir, nil); err != nil {
		t.Errorf("Load after Pull: %v", err)
	}
}
