package memory

import (
	"fmt"
	"strconv"
	"strings"
)

const maxConversationIDLen = 128

// ValidateConversationID checks a conversation id: 1-128 characters of
// [A-Za-z0-9._:-], not "." or "..". Ids name files, so anything that could
// escape the data directory is refused.
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
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return fmt.Errorf("%w: conversation_id may contain only letters, digits and . _ : - (found %q at position %d)", ErrInvalid, rune(c), i+1)
		}
	}
	return nil
}

// turnID renders a turn's id within its conversation: "t" + sequence number.
func turnID(seq int) string { return "t" + strconv.Itoa(seq) }

// fileName maps a conversation id to a file name. Ids are validated, but ':'
// is not allowed in Windows file names, so it is escaped.
func fileName(conv string) string {
	return strings.ReplaceAll(conv, ":", "%3A")
}

func itoa(n int) string { return strconv.Itoa(n) }
