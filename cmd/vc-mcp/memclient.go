package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/share"
)

// memClient is how the command line reaches memory: the MCP tools and
// resources of the data directory's shared server when one runs (so the
// commands work while hosts are connected), or of an in-process server on
// the store opened directly. Either way the commands see exactly what a
// host sees.
type memClient struct {
	c      *client.Client
	shared bool // through the shared server
	close  func() error
}

// openMemClient connects to memory for cfg's data directory.
func openMemClient(ctx context.Context, cfg settings, stderr io.Writer) (*memClient, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Asked to be read-only, a command never reaches the shared server,
	// which would store what it is given.
	if _, err := share.Status(ctx, cfg.DataDir); err == nil && !cfg.ReadOnly {
		return dialShared(ctx, cfg, log, 0)
	}
	opts := memoryOptions(cfg, log)
	var err error
	if opts.Scrubber, err = scrubberFor(cfg); err != nil {
		return nil, err
	}
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return nil, err
	}
	store, err := memory.Open(ctx, opts)
	if errors.Is(err, memory.ErrLocked) && !cfg.ReadOnly {
		// A shared server started meanwhile (it holds the directory before
		// it listens): use it. The holder may also be a process that
		// serves no socket; the user is told whom the command waits for.
		sm.close()
		noteWaiting(stderr, "", err)
		m, derr := dialShared(ctx, cfg, log, handOverTimeout)
		if derr != nil {
			return nil, fmt.Errorf("open %s: %w", cfg.DataDir, errors.Join(err, derr))
		}
		return m, nil
	}
	if err != nil {
		sm.close()
		return nil, fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	srv := mcp.NewServer(store, mcp.Options{Version: buildVersion(), Logger: log})
	c, err := client.NewInProcessClient(srv)
	if err == nil {
		err = initClient(ctx, c)
	}
	closeAll := func() error {
		var cerr error
		if c != nil {
			cerr = c.Close()
		}
		cerr = errors.Join(cerr, store.Close())
		sm.close()
		return cerr
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	return &memClient{c: c, close: closeAll}, nil
}

// dialShared is one MCP session with the running shared server; it never
// starts one, and waits up to wait (0: share.Config's default) for one to
// listen.
func dialShared(ctx context.Context, cfg settings, log *slog.Logger, wait time.Duration) (*memClient, error) {
	c, err := share.Dial(ctx, share.Config{DataDir: cfg.DataDir, Version: buildVersion(), Log: log, StartTimeout: wait})
	if err != nil {
		return nil, err
	}
	if err := initClient(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return &memClient{c: c, shared: true, close: c.Close}, nil
}

func initClient(ctx context.Context, c *client.Client) error {
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start MCP client: %w", err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "vc-mcp-cli", Version: buildVersion()}
	if _, err := c.Initialize(ctx, req); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// call runs a tool; a tool error comes back as a Go error with the tool's
// message. It returns the text and decodes the structured content into out.
func (m *memClient) call(ctx context.Context, tool string, args map[string]any, out any) (string, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := m.c.CallTool(ctx, req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			if text.Len() > 0 {
				text.WriteString("\n")
			}
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", errors.New(text.String())
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", fmt.Errorf("%s: %w", tool, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			return "", fmt.Errorf("%s: unexpected answer: %w", tool, err)
		}
	}
	return text.String(), nil
}

// read returns a resource's text.
func (m *memClient) read(ctx context.Context, uri string) (string, error) {
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := m.c.ReadResource(ctx, req)
	if err != nil {
		// The server's message, without the JSON-RPC wrapping.
		msg := strings.TrimPrefix(err.Error(), "internal error: ")
		return "", errors.New(strings.TrimPrefix(msg, uri+": "))
	}
	for _, c := range res.Contents {
		switch tc := c.(type) {
		case mcpgo.TextResourceContents:
			return tc.Text, nil
		case *mcpgo.TextResourceContents:
			return tc.Text, nil
		}
	}
	return "", fmt.Errorf("read %s: no text content", uri)
}

// status is domain_status with every page of tags.
func (m *memClient) status(ctx context.Context, conv string) (mcp.StatusPage, error) {
	var all mcp.StatusPage
	cursor := ""
	for {
		args := map[string]any{"limit": 500}
		if conv != "" {
			args["conversation_id"] = conv
		}
		if cursor != "" {
			args["cursor"] = cursor
		}
		var page mcp.StatusPage
		if _, err := m.call(ctx, "domain_status", args, &page); err != nil {
			return all, err
		}
		tags := append(all.Tags, page.Tags...)
		all = page
		all.Tags = tags
		if page.NextCursor == "" {
			all.NextCursor = ""
			return all, nil
		}
		cursor = page.NextCursor
	}
}
