package decisionlog

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"
)

// TestFrame: a line is the body's CRC-32C as 8 lower-case hex digits, a
// space, the body and a newline, and verifies back to the body.
func TestFrame(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"kind":"tags"}`, "c678c119 {\"kind\":\"tags\"}\n"},
		{`{"kind":"working","at":"2026-11-24T02:29:58.457Z"}`, "96bc41c7 {\"kind\":\"working\",\"at\":\"2026-11-24T02:29:58.457Z\"}\n"},
		{"x", fmt.Sprintf("%08x x\n", crc32.Checksum([]byte("x"), crc32.MakeTable(crc32.Castagnoli)))},
		{"héllo \x00 \"quoted\"", fmt.Sprintf("%08x %s\n", crc32.Checksum([]byte("héllo \x00 \"quoted\""), crc32.MakeTable(crc32.Castagnoli)), "héllo \x00 \"quoted\"")},
	} {
		got := Frame([]byte(tc.body))
		if string(got) != tc.want {
			t.Errorf("Frame(%q) = %q, want %q", tc.body, got, tc.want)
		}
		if app := AppendFrame([]byte("prefix"), []byte(tc.body)); string(app) != "prefix"+tc.want {
			t.Errorf("AppendFrame(prefix, %q) = %q", tc.body, app)
		}
		body, ok := Body(got[:len(got)-1])
		if !ok || string(body) != tc.body {
			t.Errorf("Body(Frame(%q)) = %q, %v", tc.body, body, ok)
		}
	}
}

// TestBody: only a line with 8 hex digits, a space and a non-empty body
// whose checksum they are verifies.
func TestBody(t *testing.T) {
	good := []byte(`c678c119 {"kind":"tags"}`)
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x01
		return b
	}
	for _, tc := range []struct {
		name string
		line []byte
		want string // "" when it must not verify
	}{
		{"good", good, `{"kind":"tags"}`},
		{"upper-case checksum", []byte(`C678C119 {"kind":"tags"}`), `{"kind":"tags"}`},
		{"flipped body byte", flip(12), ""},
		{"flipped last body byte", flip(len(good) - 1), ""},
		{"flipped checksum digit", flip(0), ""},
		{"non-hex checksum", []byte(`c678c11z {"kind":"tags"}`), ""},
		{"no space", []byte(`c678c119_{"kind":"tags"}`), ""},
		{"no space at all", []byte(`c678c119{"kind":"tags"}`), ""},
		{"empty body", Frame(nil)[:9], ""},
		{"short", []byte("c678c1"), ""},
		{"empty", nil, ""},
		{"newline kept", append(bytes.Clone(good), '\n'), ""},
		{"body cut short", good[:len(good)-1], ""},
		{"checksum with sign", []byte("+0000000 x"), ""},
	} {
		body, ok := Body(tc.line)
		if ok != (tc.want != "") || string(body) != tc.want {
			t.Errorf("%s: Body(%q) = %q, %v; want %q", tc.name, tc.line, body, ok, tc.want)
		}
	}
}
