package main

import (
	"strings"
	"testing"
)

func TestParseTokenFile(t *testing.T) {
	const a, b = "0123456789abcdef0123", "fedcba9876543210fedc"
	tests := []struct {
		name, text string
		single     string
		owners     string // "owner=token,..."
		err        string
	}{
		{"one token", a + "\n", a, "", ""},
		{"one token, spaces around", "  " + a + "  \n\n", a, "", ""},
		{"one short token", "short\n", "", "", "at least 16"},
		{"two owners", "# who token\nana " + a + "\n\nbo " + b + "\n", "", "ana=" + a + ",bo=" + b, ""},
		{"one owner", "ana " + a, "", "ana=" + a, ""},
		{"three words", "ana " + a + " extra\n", "", "", "line 1: want \"OWNER TOKEN\""},
		{"mixed", "ana " + a + "\n" + b + "\n", "", "", "line 2: want \"OWNER TOKEN\""},
		{"bad owner", "an/a " + a, "", "", "owner \"an/a\""},
		{"short owned token", "ana short", "", "", "line 1: the token of ana"},
		{"same token twice", "ana " + a + "\nbo " + a, "", "", "line 2: the same token as line 1"},
		{"same owner twice", "ana " + a + "\nana " + b, "", "", "line 2: owner ana already"},
		{"empty", "# nothing\n\n", "", "", "no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			single, owned, err := parseTokenFile(tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range owned {
				got = append(got, o.Owner+"="+o.Token)
			}
			if single != tt.single || strings.Join(got, ",") != tt.owners {
				t.Fatalf("got %q and %v, want %q and %q", single, got, tt.single, tt.owners)
			}
		})
	}
}
