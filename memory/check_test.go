package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// TestCheck damages a closed data directory in each way the store
// recovers from, and checks that Check reports it, at the right level,
// without writing a byte.
func TestCheck(t *testing.T) {
	type want struct {
		db       string
		problems int
		findings []string // each must appear in one finding's text
		records  int
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   want
	}{
		{"clean", func(*testing.T, string) {}, want{db: DBOK, records: 50}},
		{"damaged record", func(t *testing.T, dir string) {
			garble(t, filepath.Join(dir, logsDir, "c.jsonl"), 25)
		}, want{db: DBOK, problems: 2, records: 49, findings: []string{"fails verification", "have no valid record in the log: t25"}}},
		{"damaged record after a start dealt with it", func(t *testing.T, dir string) {
			garble(t, filepath.Join(dir, logsDir, "c.jsonl"), 25)
			s := openTest(t, Options{Dir: dir})
			if _, err := s.Status(context.Background(), "c"); err != nil { // loads and verifies it
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, problems: 1, records: 49, findings: []string{"is in quarantine/c.jsonl", "damaged placeholders (t25)"}}},
		{"log cut short", func(t *testing.T, dir string) {
			path := filepath.Join(dir, logsDir, "c.jsonl")
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()-30); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, problems: 1, records: 49, findings: []string{"unterminated record", "have no valid record in the log: t50"}}},
		{"master log missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, logsDir, "c.jsonl")); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, problems: 1, findings: []string{"the master log is missing: the 50 turns"}}},
		{"vc.db missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, dbFile)); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBMissing, records: 50}},
		{"vc.db damaged", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, dbFile), []byte(strings.Repeat("not a bbolt file ", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBDamaged, problems: 1, records: 50}},
		{"vc.db page damaged", func(t *testing.T, dir string) {
			// The meta pages hold; every page after them is overwritten.
			path := filepath.Join(dir, dbFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			page := os.Getpagesize()
			copy(data[2*page:], strings.Repeat("\xff\x01", len(data)))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBDamaged, problems: 1, records: 50}},
		{"index missing", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, indexDir)); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, records: 50, findings: []string{"the search index (index.bleve/) is missing"}}},
		{"decision damaged", func(t *testing.T, dir string) {
			garble(t, filepath.Join(dir, decisionsDir, "c.log"), 1)
		}, want{db: DBOK, problems: 1, records: 50, findings: []string{"decision line(s) fail verification, at byte(s) 0"}}},
		{"records after the last commit", func(t *testing.T, dir string) {
			// vc.db as it was before the last ten turns: their records
			// follow its commit, as after a crash between the two.
			old, err := os.ReadFile(filepath.Join(dir, "vc.db.at40"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, dbFile), old, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want{db: DBOK, records: 50, findings: []string{"10 record(s) after the last commit"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, Options{Dir: dir})
			msgs := chat(50, t0)
			ingest(t, s, "c", msgs[:40])
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			copyFile(t, filepath.Join(dir, dbFile), filepath.Join(dir, "vc.db.at40"))
			s = openTest(t, Options{Dir: dir})
			ingest(t, s, "c", msgs)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir)
			before := dirState(t, dir)
			rep, err := Check(context.Background(), dir, "")
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if ch := files.Changes(before, dirState(t, dir)); len(ch) > 0 {
				t.Fatalf("Check changed the data directory: %v", ch)
			}
			var texts []string
			for _, cc := range rep.Conversations {
				for _, f := range cc.Findings {
					texts = append(texts, f.Level+": "+f.What+" -> "+f.Action)
				}
			}
			all := strings.Join(texts, "\n")
			if rep.DB != tt.want.db || rep.Problems != tt.want.problems {
				t.Fatalf("vc.db %q, %d problems; want %q, %d\n%s\n%v", rep.DB, rep.Problems, tt.want.db, tt.want.problems, all, rep.DBErrors)
			}
			for _, w := range tt.want.findings {
				if !strings.Contains(all, w) {
					t.Errorf("no finding says %q:\n%s", w, all)
				}
			}
			if len(rep.Conversations) != 1 || rep.Conversations[0].ID != "c" || rep.Conversations[0].Records != tt.want.records {
				t.Fatalf("conversations %+v, want c with %d records", rep.Conversations, tt.want.records)
			}
		})
	}
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
