package memory

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Turns and segments are stored in vc.db in blocks of consecutive records
// (by sequence number or segment id), a full block compressed with
// DEFLATE: one turn record alone does not compress (its message hash is 32
// random bytes of about 120), but the roles, names, tags, times and token
// counts of its neighbours do, and extractive segment summaries repeat
// their turns' words. At 10,000 turns the records took 1.24 MB (turns) and
// 0.51 MB (segments) one by one, 0.77 and 0.16 MB in blocks. Each record
// inside a block keeps the form encodeTurn / encodeSegment give it.
//
//	key    0xFF, then the block number (8 bytes, big-endian): sorts after
//	       the one-record keys (seqKey) of earlier versions
//	value  blockDeflate, then (uvarint id, uvarint length, record) for
//	       each record of the block, by id, DEFLATE-compressed
//
// Only a full block is packed: records of a block not yet full (the turns
// ingest is appending to) are stored one per seqKey, as earlier versions
// stored every record, so a two-message exchange writes two small records
// as before; the write that fills a block packs it and deletes the keys.
// A packed block is rewritten whole when one of its records changes. An
// id is in one place only.
//
// Block sizes: bbolt keeps at least two values on a page, so values of a
// few KB (blocks of 32 turns, 2.6 KB) leave their pages a third empty;
// blocks of 128 turns (about 9.7 KB compressed) and 64 segments (7.8 KB)
// fill 96% and 87% of theirs.
const (
	blockDeflate = 0x03
	blockKeyTag  = 0xFF

	turnBlockSize    = 128
	segmentBlockSize = 64
)

func blockKey(n int) []byte {
	var b [9]byte
	b[0] = blockKeyTag
	binary.BigEndian.PutUint64(b[1:], uint64(n))
	return b[:]
}

func isBlockKey(k []byte) bool { return len(k) == 9 && k[0] == blockKeyTag }

// blockEntry is one record of a block.
type blockEntry struct {
	id  int
	rec []byte
}

// putBlocked writes recs (record bytes by id, ids >= 1) into bucket b:
// into their block when it exists (a full one), else one per seqKey; a
// block whose ids are then all there is packed and its one-record keys
// deleted.
func putBlocked(b *bolt.Bucket, size int, recs map[int][]byte) error {
	byBlock := map[int][]int{}
	for id := range recs {
		if id < 1 {
			return fmt.Errorf("record id %d out of range", id)
		}
		n := (id - 1) / size
		byBlock[n] = append(byBlock[n], id)
	}
	blocks := make([]int, 0, len(byBlock))
	for n := range byBlock {
		blocks = append(blocks, n)
	}
	slices.Sort(blocks)
	for _, n := range blocks {
		key := blockKey(n)
		slots := map[int][]byte{}
		if v := b.Get(key); v != nil {
			entries, err := decodeBlock(v) // copies: v is bbolt's until the next write
			if err != nil {
				return fmt.Errorf("block %d: %w", n, err)
			}
			for _, e := range entries {
				slots[e.id] = e.rec
			}
			for _, id := range byBlock[n] {
				slots[id] = recs[id]
				if err := b.Delete(seqKey(id)); err != nil { // an earlier version's record, if any
					return err
				}
			}
			if err := putBlock(b, key, slots); err != nil {
				return fmt.Errorf("block %d: %w", n, err)
			}
			continue
		}
		for _, id := range byBlock[n] {
			if err := b.Put(seqKey(id), recs[id]); err != nil {
				return err
			}
		}
		// Full now? Pack it. (Records come in id order, so a block whose
		// last id is missing is not full: no scan.)
		lo, hi := n*size+1, (n+1)*size
		if b.Get(seqKey(hi)) == nil {
			continue
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(lo)); k != nil && len(k) == 8 && int(binary.BigEndian.Uint64(k)) <= hi; k, v = c.Next() {
			slots[int(binary.BigEndian.Uint64(k))] = bytes.Clone(v)
		}
		if len(slots) < size {
			continue
		}
		for id := range slots {
			if err := b.Delete(seqKey(id)); err != nil {
				return err
			}
		}
		if err := putBlock(b, key, slots); err != nil {
			return fmt.Errorf("block %d: %w", n, err)
		}
	}
	return nil
}

func putBlock(b *bolt.Bucket, key []byte, slots map[int][]byte) error {
	v, err := encodeBlock(slots)
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

func encodeBlock(slots map[int][]byte) ([]byte, error) {
	ids := make([]int, 0, len(slots))
	size := 0
	for id, rec := range slots {
		ids = append(ids, id)
		size += len(rec) + 6
	}
	slices.Sort(ids)
	body := make([]byte, 0, size)
	for _, id := range ids {
		body = binary.AppendUvarint(body, uint64(id))
		body = binary.AppendUvarint(body, uint64(len(slots[id])))
		body = append(body, slots[id]...)
	}
	v, err := deflated(blockDeflate, body)
	if err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	return v, nil
}

var errBadBlock = errors.New("damaged record block")

// decodeBlock returns a block's records, by id, in memory of their own.
func decodeBlock(v []byte) ([]blockEntry, error) {
	if len(v) == 0 {
		return nil, errBadBlock
	}
	var body []byte
	switch v[0] {
	case blockDeflate:
		rd := inflaters.Get().(io.ReadCloser)
		defer inflaters.Put(rd)
		if err := rd.(flate.Resetter).Reset(bytes.NewReader(v[1:]), nil); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		buf.Grow(4 * len(v)) // about what a block inflates to: one allocation
		if _, err := buf.ReadFrom(rd); err != nil {
			return nil, fmt.Errorf("%w: decompress: %w", errBadBlock, err)
		}
		body = buf.Bytes()
	default:
		return nil, fmt.Errorf("%w: unknown form %#x", errBadBlock, v[0])
	}
	var out []blockEntry
	r := turnReader{b: body}
	last := 0
	for len(r.b) > 0 {
		id := r.uvarint()
		rec := r.bytes(r.uvarint())
		if r.err != nil {
			return nil, fmt.Errorf("%w: %w", errBadBlock, r.err)
		}
		if id < 1 || int(id) <= last {
			return nil, fmt.Errorf("%w: record id %d after %d", errBadBlock, id, last)
		}
		last = int(id)
		out = append(out, blockEntry{id: last, rec: rec})
	}
	return out, nil
}

// forEachRecord calls fn with every record of bucket b, in blocks or one
// per seqKey as earlier versions stored them, by id (fn's rec is valid
// for the transaction only).
func forEachRecord(b *bolt.Bucket, fn func(id int, rec []byte) error) error {
	var all []blockEntry
	var blocks, keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil
		}
		if isBlockKey(k) {
			blocks, keys = append(blocks, v), append(keys, k)
			return nil
		}
		if len(k) != 8 {
			return fmt.Errorf("unexpected key %x", k)
		}
		all = append(all, blockEntry{id: int(binary.BigEndian.Uint64(k)), rec: v})
		return nil
	})
	if err != nil {
		return err
	}
	// Inflating is most of loading a long conversation (about 0.15 s of
	// CPU at 100,000 turns): the blocks are inflated in parallel.
	decoded := make([][]blockEntry, len(blocks))
	errs := make([]error, len(blocks))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(blocks)) {
		wg.Go(func() {
			for i := range next {
				if decoded[i], errs[i] = decodeBlock(blocks[i]); errs[i] != nil {
					errs[i] = fmt.Errorf("block %x: %w", keys[i][1:], errs[i])
				}
			}
		})
	}
	for i := range blocks {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n := len(all)
	for _, d := range decoded {
		n += len(d)
	}
	merged := make([]blockEntry, 0, n)
	for _, d := range decoded {
		merged = append(merged, d...)
	}
	all = append(merged, all...)
	slices.SortStableFunc(all, func(a, b blockEntry) int { return a.id - b.id })
	for i, e := range all {
		if i > 0 && all[i-1].id == e.id {
			return fmt.Errorf("record %d stored twice", e.id)
		}
		if err := fn(e.id, e.rec); err != nil {
			return err
		}
	}
	return nil
}

// putTurns stores turns in their blocks.
func putTurns(b *bolt.Bucket, turns ...*turnMeta) error {
	return putRecords(b, turnBlockSize, "turns", turns, func(t *turnMeta) (int, []byte) { return t.Seq, encodeTurn(t) })
}

// putSegments stores segments in their blocks.
func putSegments(b *bolt.Bucket, segs ...*segmentRec) error {
	return putRecords(b, segmentBlockSize, "segments", segs, func(s *segmentRec) (int, []byte) { return s.ID, encodeSegment(s) })
}

// putRecords stores items, each encoded with its id, in blocks of size.
func putRecords[T any](b *bolt.Bucket, size int, what string, items []T, enc func(T) (int, []byte)) error {
	if len(items) == 0 {
		return nil
	}
	recs := make(map[int][]byte, len(items))
	for _, it := range items {
		id, rec := enc(it)
		recs[id] = rec
	}
	if err := putBlocked(b, size, recs); err != nil {
		return fmt.Errorf("store %s: %w", what, err)
	}
	return nil
}
