package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/vcdb"
)

// checkFixture is a closed data directory holding conversation "c" with
// 50 turns, and, beside it, the vc.db it had at 40 turns and after a
// forget of t3 (so a test can put an older commit back).
type checkFixture struct {
	dir, at40, log string
	msgs           []Message
}

func newCheckFixture(t *testing.T) checkFixture {
	t.Helper()
	fx := checkFixture{dir: t.TempDir(), at40: filepath.Join(t.TempDir(), "vc.db.at40"), msgs: chat(50, t0)}
	fx.log = filepath.Join(fx.dir, logsDir, "c.jsonl")
	s := openTest(t, Options{Dir: fx.dir})
	ingest(t, s, "c", fx.msgs[:40])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(fx.dir, dbFile), fx.at40)
	s = openTest(t, Options{Dir: fx.dir})
	ingest(t, s, "c", fx.msgs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fx
}

// start opens and closes the store, loading c (which verifies its log).
func (fx checkFixture) start(t *testing.T) {
	t.Helper()
	s := openTest(t, Options{Dir: fx.dir})
	if _, err := s.Status(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// damageAndRestore damages t25's record, lets a start make it a
// placeholder, then puts the log back as it was (restored from a backup).
func (fx checkFixture) damageAndRestore(t *testing.T) {
	t.Helper()
	good, err := os.ReadFile(fx.log)
	if err != nil {
		t.Fatal(err)
	}
	garble(t, fx.log, 25)
	fx.start(t)
	if err := os.WriteFile(fx.log, good, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheck damages a closed data directory in the ways the store meets
// (and some it makes itself), and checks that Check reports each at the
// right level, with nothing false on a healthy directory, without writing
// a byte.
func TestCheck(t *testing.T) {
	type want struct {
		db                  string
		problems, unchecked int
		findings            []string // each must appear in one finding (level: text)
		records             int
	}
	ok50 := want{db: DBOK, records: 50}
	tests := []struct {
		name   string
		damage func(t *testing.T, fx checkFixture)
		want   want
	}{
		{"clean", func(*testing.T, checkFixture) {}, ok50},
		{"clean after a forget", func(t *testing.T, fx checkFixture) {
			s := openTest(t, Options{Dir: fx.dir})
			if _, err := s.Forget(context.Background(), ForgetRequest{ConversationID: "c", TurnIDs: []string{"t3", "t50"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// (Close removes the index after a forget: Bleve keeps deleted
			// documents in older segments.)
		}, want{db: DBOK, records: 50, findings: []string{"notice: the search index (index.bleve/) is missing"}}},
		{"a forget cut short before vc.db's commit", func(t *testing.T, fx checkFixture) {
			old := filepath.Join(t.TempDir(), "vc.db")
			copyFile(t, filepath.Join(fx.dir, dbFile), old)
			s := openTest(t, Options{Dir: fx.dir})
			if _, err := s.Forget(context.Background(), ForgetRequest{ConversationID: "c", TurnIDs: []string{"t3", "t50"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			copyFile(t, old, filepath.Join(fx.dir, dbFile))
		}, want{db: DBOK, records: 50, findings: []string{"notice: 48 record(s) lie at other byte ranges than vc.db says", "the next start finds them at their new place"}}},
		{"vc.db committed more than the log holds, every record there", func(t *testing.T, fx checkFixture) {
			db, err := bolt.Open(filepath.Join(fx.dir, dbFile), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				var m convMeta
				if err := json.Unmarshal(tx.Bucket(bucketConvs).Get([]byte("c")), &m); err != nil {
					return err
				}
				m.LogSize += 100
				return putMeta(tx, m)
			})
			if err = errors.Join(err, db.Close()); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, records: 50, findings: []string{"notice: the log ends at byte", "yet holds every stored turn's record"}}},
		{"damaged record", func(t *testing.T, fx checkFixture) {
			garble(t, fx.log, 25)
		}, want{db: DBOK, problems: 2, records: 49, findings: []string{"problem: a record at byte", "fails verification", "problem: 1 stored turn(s) have no valid record in the log: t25"}}},
		{"damaged record after a start dealt with it", func(t *testing.T, fx checkFixture) {
			garble(t, fx.log, 25)
			fx.start(t)
		}, want{db: DBOK, records: 49, findings: []string{"notice: a damaged record at byte", "is in quarantine/c.jsonl", "notice: 1 turn(s) are damaged placeholders", ": t25"}}},
		{"the log restored after a start dealt with its damage", func(t *testing.T, fx checkFixture) {
			fx.damageAndRestore(t)
		}, want{db: DBOK, records: 50, findings: []string{"have a valid record in the log again (was it restored?): t25", "run `vc-mcp rebuild`"}}},
		{"log cut short", func(t *testing.T, fx checkFixture) {
			st, err := os.Stat(fx.log)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(fx.log, st.Size()-30); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, problems: 1, records: 49, findings: []string{"notice: the last ", "unterminated record, a write that never finished", "problem: 1 stored turn(s) have no valid record in the log: t50"}}},
		{"a record written twice", func(t *testing.T, fx checkFixture) {
			editFile(t, fx.log, func(data []byte) []byte {
				lo, hi := logLine(t, data, 10)
				at, _ := logLine(t, data, 21)
				return append(append(append([]byte{}, data[:at]...), data[lo:hi+1]...), data[at:]...)
			})
		}, want{db: DBOK, problems: 1, records: 50, findings: []string{"problem: a record at byte", "fails verification: a second record of turn 10", "notice: 30 record(s) lie at other byte ranges"}}},
		{"a record written twice after the last commit", func(t *testing.T, fx checkFixture) {
			editFile(t, fx.log, func(data []byte) []byte {
				lo, hi := logLine(t, data, 50)
				return append(data, data[lo:hi+1]...)
			})
		}, want{db: DBOK, records: 50, findings: []string{"notice: a record at byte", "after the last commit, fails verification: a second record of turn 50 (it was never acknowledged)"}}},
		{"a record missing, vc.db not read", func(t *testing.T, fx checkFixture) {
			editFile(t, fx.log, func(data []byte) []byte {
				lo, hi := logLine(t, data, 30)
				return append(data[:lo:lo], data[hi+1:]...)
			})
			if err := os.Remove(filepath.Join(fx.dir, dbFile)); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBMissing, problems: 1, records: 49, findings: []string{"problem: 1 turn number(s) have no record in the log: t30"}}},
		{"master log missing", func(t *testing.T, fx checkFixture) {
			if err := os.Remove(fx.log); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, problems: 1, findings: []string{"the master log is missing: the 50 turns"}}},
		{"master log not a file", func(t *testing.T, fx checkFixture) {
			if err := os.Remove(fx.log); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(fx.log, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, unchecked: 1, findings: []string{"unchecked: the master log could not be read", "is not a regular file"}}},
		{"vc.db missing", func(t *testing.T, fx checkFixture) {
			if err := os.Remove(filepath.Join(fx.dir, dbFile)); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBMissing, records: 50, findings: []string{"notice: vc.db is missing or empty"}}},
		{"vc.db empty", func(t *testing.T, fx checkFixture) {
			if err := os.WriteFile(filepath.Join(fx.dir, dbFile), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBMissing, records: 50, findings: []string{"notice: vc.db is missing or empty"}}},
		{"vc.db not a bbolt file", func(t *testing.T, fx checkFixture) {
			if err := os.WriteFile(filepath.Join(fx.dir, dbFile), []byte(strings.Repeat("not a bbolt file ", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBDamaged, problems: 1, records: 50, findings: []string{"problem: vc.db is damaged", "vc-mcp rebuild --data-dir"}}},
		{"vc.db cut short", func(t *testing.T, fx checkFixture) {
			path := filepath.Join(fx.dir, dbFile)
			editFile(t, path, func(data []byte) []byte {
				return data[:3*os.Getpagesize()]
			})
		}, want{db: DBDamaged, problems: 1, records: 50, findings: []string{"the file was cut short"}}},
		{"vc.db pages overwritten", func(t *testing.T, fx checkFixture) {
			// The meta pages hold; every page after them is overwritten.
			path := filepath.Join(fx.dir, dbFile)
			editFile(t, path, func(data []byte) []byte {
				copy(data[2*os.Getpagesize():], bytes.Repeat([]byte{0xff, 0x01}, len(data)))
				return data
			})
		}, want{db: DBDamaged, problems: 1, records: 50, findings: []string{"problem: vc.db ", "vc-mcp rebuild --data-dir"}}},
		{"vc.db of another schema", func(t *testing.T, fx checkFixture) {
			db, err := bolt.Open(filepath.Join(fx.dir, dbFile), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte("2")) })
			if err = errors.Join(err, db.Close()); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBDamaged, problems: 1, records: 50, findings: []string{`its schema is "2", not "1"`, "vc-mcp rebuild --data-dir"}}},
		{"vc.db not a file", func(t *testing.T, fx checkFixture) {
			path := filepath.Join(fx.dir, dbFile)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBUnread, unchecked: 1, records: 50, findings: []string{"unchecked: vc.db could not be read: not a regular file"}}},
		{"a compaction of vc.db cut short", func(t *testing.T, fx checkFixture) {
			copyFile(t, filepath.Join(fx.dir, dbFile), filepath.Join(fx.dir, dbFile+vcdb.CompactedSuffix))
		}, want{db: DBPending, records: 50, findings: []string{"notice: a compaction of vc.db is under way, or was cut short by a crash"}}},
		{"a compaction of vc.db cut short, its copy damaged", func(t *testing.T, fx checkFixture) {
			path := filepath.Join(fx.dir, dbFile)
			copyFile(t, path, path+vcdb.CompactedSuffix)
			editFile(t, path+vcdb.CompactedSuffix, func(data []byte) []byte { return data[:len(data)/2] })
		}, want{db: DBDamaged, problems: 1, records: 50, findings: []string{"problem: a compaction of vc.db was cut short by a crash and its copy cannot finish it", "cut short", "vc-mcp rebuild --data-dir"}}},
		{"index missing", func(t *testing.T, fx checkFixture) {
			if err := os.RemoveAll(filepath.Join(fx.dir, indexDir)); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, records: 50, findings: []string{"notice: the search index (index.bleve/) is missing"}}},
		{"decision damaged", func(t *testing.T, fx checkFixture) {
			garble(t, filepath.Join(fx.dir, decisionsDir, "c.log"), 1)
		}, want{db: DBOK, problems: 1, records: 50, findings: []string{"problem: 1 decision line(s) fail verification, at byte(s) 0", "keep it"}}},
		{"decisions lost to a power failure", func(t *testing.T, fx checkFixture) {
			path := filepath.Join(fx.dir, decisionsDir, "c.log")
			editFile(t, path, func(data []byte) []byte {
				lo, _ := logLine(t, data, bytes.Count(data, []byte("\n")))
				return data[:lo]
			})
		}, want{db: DBOK, records: 50, findings: []string{"notice: the decisions log ends at byte", "its newest lines were lost", "do not run `vc-mcp rebuild`"}}},
		{"decisions log missing", func(t *testing.T, fx checkFixture) {
			if err := os.Remove(filepath.Join(fx.dir, decisionsDir, "c.log")); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, problems: 1, records: 50, findings: []string{"problem: the decisions log is missing", "do not run `vc-mcp rebuild`"}}},
		{"records after the last commit", func(t *testing.T, fx checkFixture) {
			// vc.db as it was before the last ten turns: their records
			// follow its commit, as after a crash between the two.
			copyFile(t, fx.at40, filepath.Join(fx.dir, dbFile))
		}, want{db: DBOK, records: 50, findings: []string{"notice: 10 record(s) after the last commit"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newCheckFixture(t)
			tt.damage(t, fx)
			before := dirState(t, fx.dir)
			rep, err := Check(context.Background(), fx.dir, "")
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if ch := files.Changes(before, dirState(t, fx.dir)); len(ch) > 0 {
				t.Fatalf("Check changed the data directory: %v", ch)
			}
			all := findingTexts(rep)
			if rep.DB != tt.want.db || rep.Problems != tt.want.problems || rep.Unchecked != tt.want.unchecked {
				t.Fatalf("vc.db %q, %d problems, %d unchecked; want %q, %d, %d\n%s", rep.DB, rep.Problems, rep.Unchecked, tt.want.db, tt.want.problems, tt.want.unchecked, all)
			}
			for _, w := range tt.want.findings {
				if !strings.Contains(all, w) {
					t.Errorf("no finding says %q:\n%s", w, all)
				}
			}
			if len(tt.want.findings) == 0 && all != "" {
				t.Errorf("findings on a directory with nothing to say:\n%s", all)
			}
			if len(rep.Conversations) != 1 || rep.Conversations[0].ID != "c" || rep.Conversations[0].Records != tt.want.records {
				t.Fatalf("conversations %+v, want c with %d records", rep.Conversations, tt.want.records)
			}
		})
	}
}

// The placeholder of a record restored in the log is back after a rebuild,
// and check is then clean.
func TestCheckRestoredRecordAfterRebuild(t *testing.T) {
	fx := newCheckFixture(t)
	fx.damageAndRestore(t)
	if err := Rebuild(context.Background(), Options{Dir: fx.dir}, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), fx.dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// The damaged copy stays in quarantine, as it should; the turn is back.
	if rep.Problems != 0 || strings.Contains(findingTexts(rep), "placeholder") {
		t.Fatalf("after the rebuild:\n%s", findingTexts(rep))
	}
}

func findingTexts(rep CheckReport) string {
	var texts []string
	for _, f := range rep.Findings {
		texts = append(texts, f.Level+": "+f.What+" -> "+f.Action)
	}
	for _, cc := range rep.Conversations {
		for _, f := range cc.Findings {
			texts = append(texts, f.Level+": "+f.What+" -> "+f.Action)
		}
	}
	return strings.Join(texts, "\n")
}

// A running store holds vc.db: Check reads the logs alone and says so.
func TestCheckWhileServing(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(10, t0))
	rep, err := Check(context.Background(), dir, "c")
	if err != nil {
		t.Fatal(err)
	}
	if rep.DB != DBInUse || rep.Problems != 0 || len(rep.Conversations) != 1 || rep.Conversations[0].Records != 10 {
		t.Fatalf("report %+v; want vc.db in use, the 10 records verified, no problem", rep)
	}
	if _, err := Check(context.Background(), filepath.Join(dir, "nope"), ""); err == nil {
		t.Fatal("a missing directory checked without error")
	}
	if _, err := Check(context.Background(), dir, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a conversation that is not stored: %v, want ErrNotFound", err)
	}
	if _, err := Check(context.Background(), dir, "../../elsewhere/logs/c"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a path for a conversation id: %v, want ErrInvalid", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Check(ctx, dir, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled check: %v", err)
	}
}

// A log with its name from before case-safe names is checked under that
// name (the next start renames it), not reported missing.
func TestCheckOldStyleLogName(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "Chat", chat(5, t0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, logsDir, "%43hat.jsonl"), filepath.Join(dir, logsDir, "Chat.jsonl")); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problems != 0 || len(rep.Conversations) != 1 || rep.Conversations[0].ID != "Chat" || rep.Conversations[0].Records != 5 ||
		len(rep.Conversations[0].Findings) != 1 || !strings.Contains(rep.Conversations[0].Findings[0].What, "old-style name") {
		t.Fatalf("report %+v", rep)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// editFile replaces the file at path by what edit makes of it.
func editFile(t *testing.T, path string, edit func(data []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
