package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOriginCheck(t *testing.T) {
	h := NewHTTPHandler(NewServer(newFakeMemory(), Options{}), HTTPOptions{AllowedOrigins: []string{"https://app.example"}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { h.Shutdown(t.Context()) })
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	tests := []struct {
		name   string
		origin string
		want   int
	}{
		{"no origin", "", http.StatusOK},
		{"localhost origin", "http://localhost:3000", http.StatusOK},
		{"loopback ip origin", "http://127.0.0.1:5757", http.StatusOK},
		{"ipv6 loopback origin", "http://[::1]:5757", http.StatusOK},
		{"allowed origin", "https://app.example", http.StatusOK},
		{"foreign origin", "http://evil.example", http.StatusForbidden},
		{"lookalike origin", "http://localhost.evil.example", http.StatusForbidden},
		{"null origin", "null", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
