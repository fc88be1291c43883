package decisionlog

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
)

// castagnoli is the CRC-32C table of the checksums (crc32.MakeTable
// returns the standard library's one Castagnoli table, which the master
// log's checksums use too).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumLen is the length of a line's checksum; the body starts after it and
// a space.
const sumLen = 8

// Frame returns body's line: its checksum, a space, body and a newline.
// body must not hold a newline.
func Frame(body []byte) []byte {
	return AppendFrame(make([]byte, 0, len(body)+sumLen+2), body)
}

// AppendFrame appends body's line (Frame) to dst and returns the result.
func AppendFrame(dst, body []byte) []byte {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(body, castagnoli))
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, ' ')
	dst = append(dst, body...)
	return append(dst, '\n')
}

// Body verifies line (without its newline) and returns its body, a
// sub-slice of line. Not ok when the line is too short to hold a checksum,
// a space and a body, has no space after the checksum, or its checksum
// does not hold.
func Body(line []byte) ([]byte, bool) {
	if len(line) < sumLen+2 || line[sumLen] != ' ' {
		return nil, false
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[:sumLen]); err != nil {
		return nil, false
	}
	body := line[sumLen+1:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(sum[:]) {
		return nil, false
	}
	return body, true
}
