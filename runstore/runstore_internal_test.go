package runstore

import (
	"strings"
	"testing"
)

// FuzzParseBatch: any object name under a stream's prefix either is a
// batch of a positive range with a sha256 in hex, or is not one; names are
// listed from a bucket that more than one process writes.
func FuzzParseBatch(f *testing.F) {
	const prefix = "runs/r/events/"
	f.Add(prefix + "0000000000-0000000002-" + strings.Repeat("ab", 32) + ".jsonl")
	f.Add(prefix + "0000000002-0000000001-" + strings.Repeat("ab", 32) + ".jsonl")
	f.Add(prefix + "0000000000-0000000002-" + strings.Repeat("ab", 32) + ".jsonl.17ab.tmp")
	f.Add(prefix + "-000000000-0000000002-" + strings.Repeat("ab", 32) + ".jsonl")
	f.Fuzz(func(t *testing.T, key string) {
		b, ok := parseBatch(prefix, key)
		if !ok {
			return
		}
		if b.from < 0 || b.to <= b.from || b.to > maxNumber || !isHexSum(b.sum) || b.key != key {
			t.Fatalf("parseBatch(%q) = %+v", key, b)
		}
	})
}
