package embed

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the Hugging Face hub; HF_ENDPOINT overrides it.
const DefaultEndpoint = "https://huggingface.co"

// PullOptions say what Pull downloads and where; zero values mean defaults.
type PullOptions struct {
	// Repo is the hub repository (default DefaultModel). A bare name such
	// as "all-MiniLM-L6-v2" means "sentence-transformers/<name>".
	Repo string
	// Revision is a branch, tag or commit (default "main").
	Revision string
	// Dir receives the files (default DefaultDir() for the default model,
	// else a sibling directory named after the repository).
	Dir string
	// Endpoint is the hub or mirror base URL (default $HF_ENDPOINT, else
	// DefaultEndpoint).
	Endpoint string
	// Token is sent as a bearer token (default $HF_TOKEN).
	Token string
	// HubCache is a Hugging Face hub cache to reuse files from instead of
	// downloading them (default $HF_HUB_CACHE, else $HF_HOME/hub, else
	// ~/.cache/huggingface/hub). Files are reused only when their size and
	// hash match the hub's.
	HubCache string
	// Progress receives human-readable progress (nil: none).
	Progress io.Writer
	// Client is the HTTP client (default: one with sane timeouts).
	Client *http.Client
	// Retries is how many times an interrupted download resumes (default 3).
	Retries int
}

// PullResult says what Pull did.
type PullResult struct {
	Dir    string
	Commit string
	Files  []PulledFile
}

// PulledFile is one file Pull placed.
type PulledFile struct {
	Name   string
	Size   int64
	SHA256 string // for LFS files; empty for small git files
	Source string // "download", "resumed", "hub-cache" or "present"
}

// modelFiles are fetched when the repository has them; config.json and
// vocab.txt are required, and one weights file.
var (
	requiredFiles = []string{"config.json", "vocab.txt"}
	optionalFiles = []string{"tokenizer_config.json", "tokenizer.json", "special_tokens_map.json", "sentence_bert_config.json"}
	weightFiles   = []string{safetensorsFile, pytorchFile}
)

func (o PullOptions) withDefaults() PullOptions {
	if o.Repo == "" {
		o.Repo = DefaultModel
	}
	if !strings.Contains(o.Repo, "/") {
		o.Repo = "sentence-transformers/" + o.Repo
	}
	if o.Revision == "" {
		o.Revision = "main"
	}
	if o.Dir == "" {
		o.Dir = DefaultDir()
		if o.Repo != DefaultModel {
			o.Dir = filepath.Join(filepath.Dir(DefaultDir()), strings.ReplaceAll(o.Repo, "/", "--"))
		}
	}
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.Token == "" {
		o.Token = os.Getenv("HF_TOKEN")
	}
	if o.HubCache == "" {
		o.HubCache = HubCacheDir()
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			IdleConnTimeout:       60 * time.Second,
		}}
	}
	if o.Retries <= 0 {
		o.Retries = 3
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// HubCacheDir is the Hugging Face hub cache as huggingface_hub finds it:
// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub.
func HubCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

// remoteFile is what the hub says about one file.
type remoteFile struct {
	name   string
	size   int64  // -1 when unknown
	sha256 string // LFS files
	gitSHA string // git blob sha1 of small files
	url    string
}

// Pull downloads a model from the hub into opts.Dir, verifying every file's
// size and checksum against the hub's metadata, resuming interrupted
// transfers, and moving each file into place only once it is verified.
// Weights are placed before config.json, so a directory Load accepts is
// always complete. Errors wrap ErrChecksum when a file does not verify.
func Pull(ctx context.Context, opts PullOptions) (*PullResult, error) {
	o := opts.withDefaults()
	res := &PullResult{Dir: o.Dir}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("embed: pull: %w", err)
	}
	files, commit, err := o.listFiles(ctx)
	if err != nil {
		return nil, err
	}
	res.Commit = commit
	partial := filepath.Join(o.Dir, ".partial")
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return nil, fmt.Errorf("embed: pull: %w", err)
	}
	for _, f := range files {
		pf, err := o.fetch(ctx, f, partial, commit)
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, pf)
	}
	os.Remove(partial) // only succeeds when empty, which is the point
	return res, nil
}

func (o PullOptions) resolveURL(name string) string {
	return fmt.Sprintf("%s/%s/resolve/%s/%s", o.Endpoint, o.Repo, url.PathEscape(o.Revision), name)
}

func (o PullOptions) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("embed: pull: %w", err)
	}
	req.Header.Set("User-Agent", "vc-mcp")
	if o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+o.Token)
	}
	return req, nil
}

// listFiles asks the hub's API which files the revision has, then HEADs
// each chosen file for its size and checksum headers. Mirrors without the
// API fall back to HEAD requests on the known file names.
func (o PullOptions) listFiles(ctx context.Context) ([]remoteFile, string, error) {
	type sibling struct {
		Name string `json:"rfilename"`
		Size *int64 `json:"size"`
		LFS  *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	}
	var info struct {
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}
	apiURL := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", o.Endpoint, o.Repo, url.PathEscape(o.Revision))
	have := map[string]sibling{}
	apiOK := false
	apiStatus := ""
	if req, err := o.newRequest(ctx, http.MethodGet, apiURL); err == nil {
		resp, err := o.Client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return nil, "", fmt.Errorf("embed: pull %s: %w", o.Repo, err)
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		apiStatus = resp.Status
		switch {
		case resp.StatusCode == http.StatusOK && rerr == nil && json.Unmarshal(body, &info) == nil:
			apiOK = true
			for _, s := range info.Siblings {
				have[s.Name] = s
			}
			if isHex(info.SHA, 40) {
				// Every file from this one commit, even if the branch moves.
				o.Revision = info.SHA
			}
		}
	}
	withAPI := func(f remoteFile) remoteFile {
		if s, ok := have[f.name]; ok {
			if s.LFS != nil && f.sha256 == "" && isHex(s.LFS.SHA256, 64) {
				f.sha256, f.size = s.LFS.SHA256, s.LFS.Size
			}
			if f.size < 0 && s.Size != nil {
				f.size = *s.Size
			}
		}
		return f
	}
	var names []string
	pick := func(n string) bool {
		if !apiOK {
			return true
		}
		_, ok := have[n]
		return ok
	}
	for _, n := range requiredFiles {
		if !pick(n) {
			return nil, "", fmt.Errorf("embed: pull %s: the repository has no %s", o.Repo, n)
		}
	}
	if !apiOK {
		// A mirror without the API, or no such repository: ask for a file.
		if _, _, err := o.head(ctx, configFile); errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("embed: pull %s@%s: not found at %s (the API answered %q; check the name, the revision, or HF_TOKEN for a private repository)", o.Repo, o.Revision, o.Endpoint, apiStatus)
		} else if err != nil {
			return nil, "", err
		}
	}
	var files []remoteFile
	commit := info.SHA
	// Weights first, config.json last: see Pull.
	for _, n := range weightFiles {
		if !pick(n) {
			continue
		}
		f, c, err := o.head(ctx, n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if commit == "" {
			commit = c
		}
		files = append(files, withAPI(f))
		break
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("embed: pull %s: the repository has no %s or %s", o.Repo, safetensorsFile, pytorchFile)
	}
	names = append(names, optionalFiles...)
	names = append(names, "vocab.txt", "config.json")
	for _, n := range names {
		if !pick(n) {
			continue
		}
		f, c, err := o.head(ctx, n)
		if errors.Is(err, fs.ErrNotExist) && !contains(requiredFiles, n) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if commit == "" {
			commit = c
		}
		files = append(files, withAPI(f))
	}
	return files, commit, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// head reads the hub's metadata headers for one file without following
// redirects: X-Linked-Size and X-Linked-Etag (the sha256) for LFS files,
// Content-Length and ETag (the git blob sha1) for the others.
func (o PullOptions) head(ctx context.Context, name string) (remoteFile, string, error) {
	return o.headURL(ctx, name, o.resolveURL(name), 0)
}

func (o PullOptions) headURL(ctx context.Context, name, u string, depth int) (remoteFile, string, error) {
	f := remoteFile{name: name, size: -1, url: u}
	req, err := o.newRequest(ctx, http.MethodHead, f.url)
	if err != nil {
		return f, "", err
	}
	req.Header.Set("Accept-Encoding", "identity")
	client := *o.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return f, "", ctx.Err()
		}
		return f, "", fmt.Errorf("embed: pull %s: %w", name, err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return f, "", fmt.Errorf("embed: pull %s: %w", name, fs.ErrNotExist)
	case resp.StatusCode >= 400:
		return f, "", fmt.Errorf("embed: pull %s: HEAD %s: %s", name, f.url, resp.Status)
	}
	commit := resp.Header.Get("X-Repo-Commit")
	loc := resp.Header.Get("Location")
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("X-Linked-Etag") == "" &&
		strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") && depth < 5 {
		// A renamed repository: the hub redirects within itself, and the
		// metadata is at the new address (huggingface_hub follows these too).
		if base, err := url.Parse(u); err == nil {
			if ref, err := url.Parse(loc); err == nil {
				return o.headURL(ctx, name, base.ResolveReference(ref).String(), depth+1)
			}
		}
	}
	if v := resp.Header.Get("X-Linked-Etag"); v != "" {
		f.sha256 = cleanETag(v)
		if n, err := strconv.ParseInt(resp.Header.Get("X-Linked-Size"), 10, 64); err == nil {
			f.size = n
		}
	} else {
		if et := cleanETag(resp.Header.Get("ETag")); len(et) == 40 {
			f.gitSHA = et
		} else if len(et) == 64 {
			f.sha256 = et
		}
		if resp.StatusCode == http.StatusOK && resp.ContentLength >= 0 {
			f.size = resp.ContentLength
		}
	}
	if f.sha256 != "" && !isHex(f.sha256, 64) {
		f.sha256 = ""
	}
	return f, commit, nil
}

func cleanETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.ToLower(strings.Trim(s, `"`))
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// fetch places one verified file in o.Dir.
func (o PullOptions) fetch(ctx context.Context, f remoteFile, partial, commit string) (PulledFile, error) {
	dst := filepath.Join(o.Dir, f.name)
	pf := PulledFile{Name: f.name, Size: f.size, SHA256: f.sha256}
	if err := verifyFile(dst, f); err == nil {
		pf.Source = "present"
		fmt.Fprintf(o.Progress, "%s: already present and verified\n", f.name)
		return pf, nil
	}
	if src := o.findInHubCache(f, commit); src != "" {
		err := writeFileAtomic(dst, func(w io.Writer) error {
			in, err := os.Open(src)
			if err != nil {
				return err
			}
			defer in.Close()
			_, err = io.Copy(w, in)
			return err
		})
		if err == nil {
			pf.Source = "hub-cache"
			fmt.Fprintf(o.Progress, "%s: copied from the Hugging Face cache %s\n", f.name, src)
			return pf, nil
		}
	}
	tmp := filepath.Join(partial, f.name+".incomplete")
	resumed := false
	var lastErr error
	for attempt := 0; attempt <= o.Retries; attempt++ {
		if ctx.Err() != nil {
			return pf, ctx.Err()
		}
		r, err := o.download(ctx, f, tmp)
		resumed = resumed || r
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				return pf, ctx.Err()
			}
			fmt.Fprintf(o.Progress, "%s: %v; retrying\n", f.name, err)
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			continue
		}
		if err := verifyFile(tmp, f); err != nil {
			// A resumed file may mix two versions: start over once.
			os.Remove(tmp)
			lastErr = err
			if resumed {
				resumed = false
				fmt.Fprintf(o.Progress, "%s: %v; downloading again from the start\n", f.name, err)
				continue
			}
			return pf, err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return pf, fmt.Errorf("embed: pull: %w", err)
		}
		if err := syncDir(o.Dir); err != nil {
			return pf, err
		}
		pf.Source = "download"
		if resumed {
			pf.Source = "resumed"
		}
		return pf, nil
	}
	return pf, fmt.Errorf("embed: pull %s: giving up after %d attempts: %w", f.name, o.Retries+1, lastErr)
}

// download appends the rest of the file to tmp, resuming from its current
// size with a Range request when the server allows it. It reports whether
// it resumed.
func (o PullOptions) download(ctx context.Context, f remoteFile, tmp string) (bool, error) {
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return false, fmt.Errorf("embed: pull: %w", err)
	}
	defer out.Close()
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return false, fmt.Errorf("embed: pull: %w", err)
	}
	if f.size >= 0 && have > f.size {
		have = 0
	}
	req, err := o.newRequest(ctx, http.MethodGet, f.url)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return false, fmt.Errorf("embed: pull %s: %w", f.name, err)
	}
	defer resp.Body.Close()
	resumed := false
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return false, fmt.Errorf("embed: pull %s: unexpected Content-Range %q", f.name, resp.Header.Get("Content-Range"))
		}
		resumed = true
	case http.StatusOK:
		have = 0 // the server ignored the range: start over
	case http.StatusRequestedRangeNotSatisfiable:
		if err := out.Truncate(0); err != nil {
			return false, fmt.Errorf("embed: pull: %w", err)
		}
		return false, fmt.Errorf("embed: pull %s: range not satisfiable", f.name)
	default:
		return false, fmt.Errorf("embed: pull %s: GET %s: %s", f.name, f.url, resp.Status)
	}
	if err := out.Truncate(have); err != nil {
		return false, fmt.Errorf("embed: pull: %w", err)
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return false, fmt.Errorf("embed: pull: %w", err)
	}
	p := &progress{w: o.Progress, name: f.name, done: have, total: f.size}
	_, err = io.Copy(out, io.TeeReader(resp.Body, p))
	p.finish()
	if err != nil {
		return resumed, fmt.Errorf("embed: pull %s: interrupted at %d bytes: %w", f.name, p.done, err)
	}
	if err := out.Sync(); err != nil {
		return resumed, fmt.Errorf("embed: pull: %w", err)
	}
	return resumed, out.Close()
}

func contentRangeStart(h string) (int64, bool) {
	// "bytes START-END/TOTAL"
	h = strings.TrimPrefix(h, "bytes ")
	dash := strings.IndexByte(h, '-')
	if dash <= 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(h[:dash], 10, 64)
	return n, err == nil
}

// verifyFile checks a file's size and hash against the hub's metadata.
func verifyFile(p string, f remoteFile) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if f.size >= 0 && fi.Size() != f.size {
		return fmt.Errorf("embed: %s: size %d, the hub says %d: %w", f.name, fi.Size(), f.size, ErrChecksum)
	}
	var h hash.Hash
	want := ""
	switch {
	case f.sha256 != "":
		h, want = sha256.New(), f.sha256
	case f.gitSHA != "":
		h, want = sha1.New(), f.gitSHA
		fmt.Fprintf(h, "blob %d\x00", fi.Size())
	default:
		return nil // nothing announced to check against beyond the size
	}
	in, err := os.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := io.Copy(h, in); err != nil {
		return fmt.Errorf("embed: verify %s: %w", f.name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("embed: %s: hash %s, the hub says %s: %w", f.name, got, want, ErrChecksum)
	}
	return nil
}

// findInHubCache looks for a verified copy of f in the Hugging Face cache
// (models--ORG--NAME/snapshots/*/FILE).
func (o PullOptions) findInHubCache(f remoteFile, commit string) string {
	if o.HubCache == "" {
		return ""
	}
	root := filepath.Join(o.HubCache, "models--"+strings.ReplaceAll(o.Repo, "/", "--"), "snapshots")
	var dirs []string
	if commit != "" {
		dirs = append(dirs, filepath.Join(root, commit))
	}
	if all, err := os.ReadDir(root); err == nil {
		for _, d := range all {
			if d.Name() != commit {
				dirs = append(dirs, filepath.Join(root, d.Name()))
			}
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, path.Clean("/" + f.name)[1:])
		if (f.sha256 != "" || f.gitSHA != "") && verifyFile(p, f) == nil {
			return p
		}
	}
	return ""
}

// progress prints "name: 12.3 / 90.9 MB (13%)" at most twice a second.
type progress struct {
	w           io.Writer
	name        string
	done, total int64
	last        time.Time
	printed     bool
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if time.Since(p.last) >= 500*time.Millisecond {
		p.print()
	}
	return len(b), nil
}

func (p *progress) print() {
	p.last = time.Now()
	p.printed = true
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r%s: %.1f / %.1f MB (%d%%)", p.name, float64(p.done)/1e6, float64(p.total)/1e6, p.done*100/p.total)
	} else {
		fmt.Fprintf(p.w, "\r%s: %.1f MB", p.name, float64(p.done)/1e6)
	}
}

func (p *progress) finish() {
	p.print()
	fmt.Fprintln(p.w)
}
