//go:build race

package schema_test

// raceEnabled: the race detector makes sync.Pool drop items, so
// allocation counts are not meaningful.
const raceEnabled = true
