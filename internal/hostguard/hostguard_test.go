package hostguard

import "testing"

func TestOriginAllowed(t *testing.T) {
	for _, tc := range []struct {
		origin  string
		allowed []string
		want    bool
	}{
		{"http://localhost:3000", nil, true},
		{"http://127.0.0.1", nil, true},
		{"http://[::1]:8080", nil, true},
		{"https://evil.example", nil, false},
		{"http://localhost.evil.example", nil, false},
		{"null", nil, false},
		{"file://localhost", nil, false},
		{"https://app.example", []string{"https://app.example/"}, true},
		{"https://APP.example", []string{"https://app.example"}, true},
		{"https://other.example", []string{"https://app.example"}, false},
		{"https://evil.example", []string{"*"}, true},
	} {
		if got := OriginAllowed(tc.origin, tc.allowed); got != tc.want {
			t.Errorf("OriginAllowed(%q, %q) = %t, want %t", tc.origin, tc.allowed, got, tc.want)
		}
	}
}
