//go:build race

package memory

// raceEnabled: the race detector slows the store down several times; tests
// that build large fixtures use smaller ones under it.
const raceEnabled = true
