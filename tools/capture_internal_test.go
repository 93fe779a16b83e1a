package tools

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestCaptureKeepsHeadAndTail writes random chunks and checks that a
// capture keeps exactly the stream's first headMax and last tailMax bytes
// and counts the rest.
func TestCaptureKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		headMax, tailMax := rng.IntN(40), rng.IntN(40)
		c := newCapture(headMax, tailMax)
		var all []byte
		for range rng.IntN(30) {
			p := make([]byte, rng.IntN(100))
			for i := range p {
				p[i] = byte('a' + rng.IntN(26))
			}
			c.Write(p)
			all = append(all, p...)
		}
		head := all[:min(headMax, len(all))]
		rest := all[len(head):]
		tail := rest[max(0, len(rest)-tailMax):]
		if !bytes.Equal(c.head, head) || !bytes.Equal(c.tailBytes(), tail) || c.omitted() != int64(len(rest)-len(tail)) {
			t.Fatalf("run %d (head %d, tail %d): kept %q and %q, omitted %d; want %q and %q, omitted %d", run, headMax, tailMax, c.head, c.tailBytes(), c.omitted(), head, tail, len(rest)-len(tail))
		}
	}
}
