package secretshape

import "testing"

// TestMinLen: no shape is shorter than MinLen, and one is that short, so
// a caller that skips shorter texts misses nothing.
func TestMinLen(t *testing.T) {
	shortest := MinHighEntropy
	for _, p := range prefixes {
		shortest = min(shortest, len(p.prefix)+p.min)
	}
	if shortest != MinLen {
		t.Fatalf("the shortest shape is %d bytes, MinLen %d", shortest, MinLen)
	}
}
