// Package pgtest starts, for tests, a throwaway PostgreSQL server: initdb on
// a temporary directory, the server on a free 127.0.0.1 port (no unix
// socket), trust authentication, fsync off. One server per test binary,
// started on first use and killed with the binary; each test gets its own
// database.
//
// The server binaries come from PATH or Debian's /usr/lib/postgresql/*/bin
// (`make deps` installs the postgresql package as root). When they are
// absent the test fails with what to install; only VC_SKIP_POSTGRES=1 turns
// that into a skip (CI never sets it). PostgreSQL refuses to run as root: a
// test running as root runs the server as the "postgres" user, which
// Debian's package creates.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// SkipEnv is the variable that lets PostgreSQL tests skip.
const SkipEnv = "VC_SKIP_POSTGRES"

var (
	once    sync.Once
	baseURL string
	failure error
	dbs     atomic.Int64
)

// URL returns the URL of a new, empty database on the test server.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { baseURL, failure = start() })
	if failure != nil {
		if os.Getenv(SkipEnv) == "1" {
			t.Skipf("PostgreSQL unavailable and %s=1: %v", SkipEnv, failure)
		}
		t.Fatalf("PostgreSQL test server: %v\n(install Debian's postgresql package: `make deps` does it as root; or set %s=1 to skip these tests)", failure, SkipEnv)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, baseURL+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return baseURL + "/" + name + "?sslmode=disable"
}

// findBin finds a server binary.
func findBin(name string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) == 0 {
		return "", fmt.Errorf("%s not found in PATH or /usr/lib/postgresql/*/bin", name)
	}
	sort.Strings(found)
	return found[len(found)-1], nil
}
