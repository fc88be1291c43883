package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vc-mcp/vc-mcp/dashboard"
	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/proxy"
)

const proxyUsage = `usage: vc-mcp proxy --upstream URL [--listen 127.0.0.1:5757] [--format auto|openai|anthropic|gemini] [--label L]
       vc-mcp proxy --proxy-config proxy.yaml   (several instances sharing one memory)

Point an LLM client's base URL at the listen address: it gets memory with no
code change. The same port serves MCP at /mcp and the dashboard at /dashboard.

Proxy flags:
  --upstream URL        the API to forward to, e.g. https://api.anthropic.com
  --listen ADDR         address to listen on (default 127.0.0.1:5757; loopback only)
  --format F            auto (default: detect per request), openai, anthropic or gemini
  --label L             name of this instance in the log lines and the dashboard
  --proxy-config FILE   YAML: instances (listen, upstream, label, format) and proxy settings

Memory settings (data dir, thresholds, model, LLM) are serve's: see "vc-mcp serve -h".
`

// proxyFlags are the proxy's own command-line flags.
type proxyFlags struct {
	upstream, listen, format, label, config string
	help                                    bool
}

// splitProxyFlags takes the proxy's flags out of args, leaving serve's
// settings for loadConfig.
func splitProxyFlags(args []string) (proxyFlags, []string, error) {
	var pf proxyFlags
	targets := map[string]*string{"upstream": &pf.upstream, "listen": &pf.listen, "format": &pf.format, "label": &pf.label, "proxy-config": &pf.config}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" || a == "-help" {
			pf.help = true
			continue
		}
		name := strings.TrimLeft(a, "-")
		if name == a || a == "--" {
			rest = append(rest, a)
			continue
		}
		value, hasValue := "", false
		if j := strings.IndexByte(name, '='); j >= 0 {
			name, value, hasValue = name[:j], name[j+1:], true
		}
		target, ok := targets[name]
		if !ok {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return pf, nil, fmt.Errorf("proxy: flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		*target = value
	}
	return pf, rest, nil
}

// proxyFile is the proxy's YAML config (--proxy-config). Every key is
// optional; unknown keys are refused.
type proxyFile struct {
	Instances []struct {
		Listen   string `yaml:"listen"`
		Upstream string `yaml:"upstream"`
		Label    string `yaml:"label"`
		Format   string `yaml:"format"`
	} `yaml:"instances"`
	// RecallTokens bounds the injected context (default 2000).
	RecallTokens int `yaml:"recall_tokens"`
	// ProtectedTurns: recent turns always forwarded (default: protected_turns).
	ProtectedTurns int `yaml:"protected_turns"`
	// EngineTimeout: past it a request goes upstream unmodified (default 2s).
	EngineTimeout string `yaml:"engine_timeout"`
	// MaxRounds of paging tool calls per request (default 5).
	MaxRounds int `yaml:"max_rounds"`
	// FilterHistory drops old turns about other topics (default true).
	FilterHistory *bool `yaml:"filter_history"`
	// Paging offers vc_find_quote, vc_expand_topic, vc_collapse_topic (default true).
	Paging *bool `yaml:"paging"`
	// ContextWindows override the built-in table (model prefix -> tokens).
	ContextWindows map[string]int `yaml:"context_windows"`
	// Tools narrows the client's tools (seed 002).
	Tools *proxy.ToolPolicy `yaml:"tools"`
}

// proxyInstance is one listener.
type proxyInstance struct {
	listen, upstream, label string
	format                  proxy.Format
}

func readProxyFile(path string) (proxyFile, error) {
	var f proxyFile
	if path == "" {
		return f, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("proxy config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return f, fmt.Errorf("proxy config %s: %w", path, err)
	}
	return f, nil
}

// proxyInstances lists the listeners: the flags' one, then the file's.
func proxyInstances(pf proxyFlags, f proxyFile) ([]proxyInstance, error) {
	var out []proxyInstance
	add := func(where, listen, upstream, label, format string) error {
		if upstream == "" {
			return fmt.Errorf("%s: upstream is required (e.g. https://api.openai.com)", where)
		}
		if listen == "" {
			listen = "127.0.0.1:5757"
		}
		fm, err := proxy.ParseFormat(format)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for _, o := range out {
			if o.listen == listen && !strings.HasSuffix(listen, ":0") {
				return fmt.Errorf("%s: listen address %s is used twice", where, listen)
			}
		}
		out = append(out, proxyInstance{listen: listen, upstream: upstream, label: label, format: fm})
		return nil
	}
	if pf.upstream != "" || pf.listen != "" || pf.label != "" || pf.format != "" {
		if err := add("flags", pf.listen, pf.upstream, pf.label, pf.format); err != nil {
			return nil, err
		}
	}
	for i, in := range f.Instances {
		if err := add(fmt.Sprintf("proxy config instances[%d]", i), in.Listen, in.Upstream, in.Label, in.Format); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("proxy: give --upstream URL, or --proxy-config with instances")
	}
	return out, nil
}

func runProxy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	pf, rest, err := splitProxyFlags(args)
	if err != nil {
		return err
	}
	if pf.help {
		fmt.Fprint(stderr, proxyUsage)
		return flag.ErrHelp
	}
	cfg, extra, err := loadConfig("proxy", rest, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("proxy: unexpected argument %q (flags start with --)", extra[0])
	}
	if cfg.AllowRemote {
		// Its LLM routes put memory into any request that reaches them (the
		// client's Authorization header is the upstream's API key, not a
		// token of ours), and /mcp and the dashboard would be reachable
		// without a token too: off this host, anyone could read the memory.
		return errors.New("proxy: allow_remote is refused: the proxy adds memory to every request that reaches it and has no token of its own, so it serves loopback only; " +
			"run it on the machine of its clients, or keep it on 127.0.0.1 behind a reverse proxy that authenticates them")
	}
	file, err := readProxyFile(pf.config)
	if err != nil {
		return err
	}
	instances, err := proxyInstances(pf, file)
	if err != nil {
		return err
	}
	timeout := 2 * time.Second
	if file.EngineTimeout != "" {
		if timeout, err = time.ParseDuration(file.EngineTimeout); err != nil || timeout <= 0 {
			return fmt.Errorf("proxy config: engine_timeout %q: a duration such as 2s", file.EngineTimeout)
		}
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()

	// Bind every address before opening the store: a bad one costs nothing.
	listeners := make([]net.Listener, 0, len(instances))
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for _, in := range instances {
		c := cfg
		c.HTTPAddr = in.listen
		l, err := listen(c)
		if err != nil {
			return fmt.Errorf("proxy %s: %w", in.listen, err)
		}
		listeners = append(listeners, l)
	}

	opts := memoryOptions(cfg, log)
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return err
	}
	defer sm.close()
	// Like serve --http, the proxy holds the data directory itself (taking it
	// over from a shared daemon) and serves the shared socket, so stdio hosts
	// and the proxy use one memory.
	store, release, err := openShared(ctx, cfg, opts, true, log)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			log.Warn("proxy: close the store", "data_dir", cfg.DataDir, "err", cerr)
		}
	}()

	journal := proxy.NewJournal(0)
	mcpSrv := mcp.NewServer(store, mcp.Options{Version: buildVersion(), Logger: log, Sampling: sm.sampling})
	stopSocket := func() {}
	if !store.ReadOnly() { // a read-only proxy writes nothing there, and takes no host over
		stopSocket = serveSocket(ctx, mcpSrv, cfg, "proxy", listeners[0].Addr().String(), log)
	}
	defer stopSocket()
	release()
	stopMirror := startMarkdownMirror(ctx, store, cfg, log)
	defer stopMirror()
	mcpH := mcp.NewHTTPHandler(mcpSrv, mcp.HTTPOptions{AllowedOrigins: cfg.AllowOrigins, Logger: log})
	dash, err := dashboard.New(dashboard.Options{Journal: journal, Memory: store, AllowedOrigins: cfg.AllowOrigins, Logger: log})
	if err != nil {
		return err
	}
	protected := file.ProtectedTurns
	if protected <= 0 {
		protected = cfg.ProtectedTurns
	}
	var servers []*proxy.Server
	var https []*http.Server
	errc := make(chan error, len(instances))
	for i, in := range instances {
		p, err := proxy.New(proxy.Options{
			Upstream: in.upstream, Format: in.format, Label: in.label, Memory: store,
			RecallTokens: file.RecallTokens, ProtectedTurns: protected, MaxRounds: file.MaxRounds,
			NoFilter: file.FilterHistory != nil && !*file.FilterHistory, NoPaging: file.Paging != nil && !*file.Paging,
			EngineTimeout: timeout, ContextWindows: contextLimits(cfg.ModelContextLimits, file.ContextWindows), SoftThreshold: cfg.SoftThreshold,
			Tools: file.Tools, AllowedOrigins: cfg.AllowOrigins, MaxMessageBytes: cfg.MaxMessageBytes, Journal: journal, Log: log, LineOut: stderr,
		})
		if err != nil {
			return fmt.Errorf("proxy %s: %w", in.listen, err)
		}
		servers = append(servers, p)
		mux := http.NewServeMux()
		mux.Handle("/mcp", mcpH)
		mux.Handle("/sse", mcpH)
		mux.Handle("/message", mcpH)
		mux.Handle("/dashboard", dash)
		mux.Handle("/dashboard/", dash)
		mux.Handle("/", p)
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		https = append(https, hs)
		base := "http://" + listeners[i].Addr().String()
		fmt.Fprintf(stderr, "vc-mcp proxy %s: %s -> %s (MCP %s/mcp, dashboard %s/dashboard/); data in %s\n", p.Label(), base, in.upstream, base, base, cfg.DataDir)
		go func(l net.Listener) { errc <- hs.Serve(l) }(listeners[i])
	}
	select {
	case err = <-errc:
		err = fmt.Errorf("proxy: %w", err)
	case <-ctx.Done():
		err = nil
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var errs []error
	for _, hs := range https {
		errs = append(errs, hs.Shutdown(shutdownCtx))
	}
	errs = append(errs, mcpH.Shutdown(shutdownCtx))
	for _, p := range servers {
		errs = append(errs, p.Drain(shutdownCtx))
	}
	if serr := errors.Join(errs...); serr != nil {
		log.Warn("proxy shutdown", "err", serr)
	}
	return err
}

// contextLimits merges the config file's model_context_limits with the
// proxy config's context_windows (which win).
func contextLimits(limits, windows map[string]int) map[string]int {
	out := make(map[string]int, len(limits)+len(windows))
	for k, v := range limits {
		out[k] = v
	}
	for k, v := range windows {
		out[k] = v
	}
	return out
}
