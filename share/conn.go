package share

import (
	"bufio"
	"net"
)

// Conn is one MCP session's connection to the owner, after the hellos.
type Conn struct {
	net.Conn
	r     *bufio.Reader
	Hello Hello
}

// Read reads what the owner sent after its hello.
func (c *Conn) Read(p []byte) (int, error) { return c.r.Read(p) }
