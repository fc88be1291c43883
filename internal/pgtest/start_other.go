//go:build !linux

package pgtest

import "errors"

// start: the throwaway server is only implemented on Linux (CI's system).
func start() (string, error) {
	return "", errors.New("the PostgreSQL test server runs on Linux only")
}
