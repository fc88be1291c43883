package memory

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

const maxConversationIDLen = 128

// ValidateConversationID checks a conversation id: 1-128 characters of
// [A-Za-z0-9._:-], not "." or "..", whose file name (fileName) fits a
// file system's 255 bytes. Ids name files, so anything that could escape
// the data directory is refused.
func ValidateConversationID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: conversation_id must not be empty", ErrInvalid)
	}
	if len(id) > maxConversationIDLen {
		return fmt.Errorf("%w: conversation_id is %d characters; the limit is %d", ErrInvalid, len(id), maxConversationIDLen)
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: conversation_id %q is reserved", ErrInvalid, id)
	}
	escaped := 0
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return fmt.Errorf("%w: conversation_id may contain only letters, digits and . _ : - (found %q at position %d)", ErrInvalid, rune(c), i+1)
		}
		if escapedInName(c) {
			escaped++
		}
	}
	if n := len(fileName(id)); n > maxFileNameLen {
		return fmt.Errorf("%w: conversation_id %q is too long for a file name: each of its %d upper-case letters and colons is written as 3 characters in its files' names, %d in all, and the limit is %d; use fewer of them or a shorter id",
			ErrInvalid, clip(id, 40), escaped, n, maxFileNameLen)
	}
	return nil
}

// maxFileNameLen bounds fileName(id): with the longest extension of a
// master log (.jsonl) the name stays within the 255 bytes file systems
// allow. An id over it could never be stored (its log could not be made).
const maxFileNameLen = 255 - len(logExt)

// turnID renders a turn's id within its conversation: "t" + sequence number.
func turnID(seq int) string { return "t" + strconv.Itoa(seq) }

// fileName maps a conversation id to a file name that is safe on every
// file system: ':' (not allowed on Windows) and every upper-case letter
// (case-insensitive file systems, macOS and Windows, would give "Chat" and
// "chat" one file) are written %XX, the byte in upper-case hex. A name so
// made has no literal upper-case letter, so folding its case loses
// nothing: idFromFileName reads it back either way. Windows cannot hold
// two more kinds of name: a device's ("con", "nul.txt", "com1":
// files.WindowsDevice), whose first byte is written %XX, and one ending
// in '.', whose last dot is written %2E.
func fileName(conv string) string {
	var b strings.Builder
	for i := 0; i < len(conv); i++ {
		c := conv[i]
		if escapedInName(c) || i == 0 && files.WindowsDevice(conv) || i == len(conv)-1 && c == '.' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// escapedInName says whether fileName writes byte c of an id as %XX
// (three bytes).
func escapedInName(c byte) bool { return c == ':' || c >= 'A' && c <= 'Z' }

// idFromFileName reverses fileName (hex digits in either case). Names from
// before upper-case letters were escaped ("Chat") read as themselves.
func idFromFileName(name string) string {
	if !strings.Contains(name, "%") {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '%' && i+2 < len(name) {
			if v, err := strconv.ParseUint(name[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// convFile is where conversation id's file of one kind lives: dir's
// sub-directory sub, named fileName(id)+ext (dir "" gives the path inside
// the data directory). Every per-conversation file is named so.
func convFile(dir, sub, id, ext string) string {
	return filepath.Join(dir, sub, fileName(id)+ext)
}

// shortList joins items for a message, naming at most most of them and
// counting the rest ("a, b and 3 more").
func shortList(items []string, most int) string {
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:most], ", "), len(items)-most)
}
