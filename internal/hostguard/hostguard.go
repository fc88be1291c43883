// Package hostguard is the policy that keeps web pages out of the local
// HTTP endpoints (MCP, the REST API, the proxy's LLM routes): a request that
// came in over loopback must name a loopback Host (else a page on a DNS name
// rebound to 127.0.0.1 could reach it), and a browser's Origin must be a
// loopback one or one the user allowed. Requests without an Origin (SDKs,
// curl, MCP hosts) pass the Origin check.
package hostguard

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// LoopbackHost reports whether host (a name or an IP, without port;
// brackets allowed) is the local machine's loopback.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// HostOnly drops the port of host:port (a bare host is returned as is).
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// Rebound reports whether r came in over a loopback connection with a Host
// that is not loopback: a DNS rebinding from a web page. A listener open to
// other hosts (allow_remote) is asked for by its own names on its other
// addresses; over loopback it is still only localhost.
func Rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	return LoopbackHost(HostOnly(local.String())) && !LoopbackHost(HostOnly(r.Host))
}

// OriginAllowed accepts loopback origins and the listed ones ("*" = any).
func OriginAllowed(origin string, allowed []string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return LoopbackHost(u.Hostname())
}

// Refusal says why r is refused ("" when it is not): a rebound Host, or an
// Origin header that is not allowed.
func Refusal(r *http.Request, allowed []string) string {
	if Rebound(r) {
		return "Host " + r.Host + " refused on a loopback connection (a web page's DNS rebinding?): use 127.0.0.1 or localhost"
	}
	if o := r.Header.Get("Origin"); o != "" && !OriginAllowed(o, allowed) {
		return "origin not allowed: " + o + " (start vc-mcp with --allow-origin to accept it)"
	}
	return ""
}
