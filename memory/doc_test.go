package memory

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocMapsEveryFile keeps the package comment's map of files ("Where
// things are") true: every file of the package is named in it, by name or
// by a pattern such as writable_*.go, and every name in it is a file.
func TestDocMapsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "# Where things are")
	if i < 0 {
		t.Fatal(`doc.go has no "# Where things are" section`)
	}
	named := regexp.MustCompile(`[a-z_]+(?:_\*)?\.go`).FindAllString(text[i:], -1)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, name := range named {
		matches, err := filepath.Glob(name)
		if err != nil || len(matches) == 0 {
			t.Errorf("doc.go's map names %s, which is no file of the package", name)
		}
		for _, m := range matches {
			covered[m] = true
		}
	}
	for _, f := range files {
		if f != "doc.go" && !strings.HasSuffix(f, "_test.go") && !covered[f] {
			t.Errorf("%s is not in doc.go's map of files (\"Where things are\"): say what it holds there", f)
		}
	}
}
