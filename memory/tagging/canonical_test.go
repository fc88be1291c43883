package tagging

import (
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	aliases := map[string]string{"db": "database", "k8s": "kubernetes", "postgresql": "postgres", "ml": "Machine Learning"}
	tests := []struct {
		name, in string
		aliases  map[string]string
		want     string
	}{
		{"lowercase", "Database", nil, "database"},
		{"spaces to dash", "Database Migration", nil, "database-migration"},
		{"runs of punctuation", "  --Rate__Limiting!!  ", nil, "rate-limiting"},
		{"plural", "databases", nil, "database"},
		{"ies", "queries", nil, "query"},
		{"xes", "boxes", nil, "box"},
		{"ches", "matches", nil, "match"},
		{"che singular", "caches", nil, "cache"},
		{"shes", "dishes", nil, "dish"},
		{"sses", "classes", nil, "class"},
		{"last word only", "sales-reports", nil, "sales-report"},
		{"compound head", "Database Migrations", nil, "database-migration"},
		{"news", "news", nil, "news"},
		{"bus", "bus", nil, "bus"},
		{"buses", "buses", nil, "bus"},
		{"status", "status", nil, "status"},
		{"statuses", "statuses", nil, "status"},
		{"analysis", "analysis", nil, "analysis"},
		{"analyses", "analyses", nil, "analysis"},
		{"physics", "physics", nil, "physics"},
		{"series", "series", nil, "series"},
		{"species", "species", nil, "species"},
		{"glass", "glass", nil, "glass"},
		{"class", "class", nil, "class"},
		{"chaos", "chaos", nil, "chaos"},
		{"kubernetes", "Kubernetes", nil, "kubernetes"},
		{"aws", "AWS", nil, "aws"},
		{"ios", "iOS", nil, "ios"},
		{"gas", "gas", nil, "gas"},
		{"lens", "lens", nil, "lens"},
		{"is", "is", nil, "is"},
		{"was", "was", nil, "was"},
		{"has", "has", nil, "has"},
		{"ss ending", "business", nil, "business"},
		{"us ending", "virus", nil, "virus"},
		{"is ending", "tennis", nil, "tennis"},
		{"short word", "ads", nil, "ads"},
		{"movies", "movies", nil, "movie"},
		{"topics", "topics", nil, "topic"},
		{"statistics kept", "statistics", nil, "statistics"},
		{"identifier with digit", "k8s", nil, "k8s"},
		{"no vowel acronym", "DNS", nil, "dns"},
		{"js suffix", "Node.js", nil, "node-js"},
		{"alias", "DB", aliases, "database"},
		{"alias after folding", "Repos", map[string]string{"repo": "repository"}, "repository"},
		{"alias before folding", "PostgreSQL", aliases, "postgres"},
		{"alias target canonical", "ML", aliases, "machine-learning"},
		{"empty", "", nil, ""},
		{"only punctuation", "!!! ---", nil, ""},
		{"non ascii dropped", "café au lait", nil, "caf-au-lait"},
		{"digits", "Postgres 15", nil, "postgres-15"},
		{"too long", strings.Repeat("abcdefghij", 10), nil, strings.Repeat("abcdefghij", 6) + "abcd"},
		{"too long trims dash", strings.Repeat("abcdefg-", 10), nil, strings.TrimSuffix(strings.Repeat("abcdefg-", 8), "-")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Canonicalize(tt.in, tt.aliases); got != tt.want {
				t.Errorf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// checkCanonical reports what is wrong with a canonical tag, or "".
func checkCanonical(tag string) string {
	if len(tag) > MaxTagLen {
		return "longer than MaxTagLen"
	}
	if strings.HasPrefix(tag, "-") || strings.HasSuffix(tag, "-") || strings.Contains(tag, "--") {
		return "stray dash"
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "character outside [a-z0-9-]"
		}
	}
	return ""
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{"Databases", "queries", "news", "k8s", "Node.js", "--a--b--", "ÉCOLE", "", strings.Repeat("ab-", 40), "statuses"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := Canonicalize(in, nil)
		if msg := checkCanonical(got); msg != "" {
			t.Fatalf("Canonicalize(%q) = %q: %s", in, got, msg)
		}
		if again := Canonicalize(got, nil); again != got {
			t.Fatalf("not idempotent: Canonicalize(%q) = %q, then %q", in, got, again)
		}
		if got == "" && strings.IndexFunc(in, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }) >= 0 {
			t.Fatalf("Canonicalize(%q) is empty although it has ASCII letters or digits", in)
		}
	})
}

func BenchmarkCanonicalize(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Canonicalize("Database Migrations", nil)
		Canonicalize("queries", nil)
		Canonicalize("kubernetes", nil)
	}
}
