package tools

import (
	"fmt"
	"sync"
)

// capture keeps the head and the tail of a stream that may be huge, and
// counts what it dropped in between. It is safe for concurrent writes.
type capture struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	tail    []byte // a ring once full
	tailPos int    // next write position in a full ring
	total   int64
}

func newCapture(headMax, tailMax int) *capture {
	return &capture{headMax: headMax, tailMax: tailMax}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if c.tailMax == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax {
		c.tail = append(c.tail[:0], p[len(p)-c.tailMax:]...)
		c.tailPos = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(c.tail) < c.tailMax {
			k := min(c.tailMax-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.tailPos:], p)
		c.tailPos = (c.tailPos + k) % c.tailMax
		p = p[k:]
	}
	return n, nil
}

// tailBytes returns the kept tail in order.
func (c *capture) tailBytes() []byte {
	if len(c.tail) < c.tailMax || c.tailPos == 0 {
		return c.tail
	}
	out := make([]byte, 0, len(c.tail))
	out = append(out, c.tail[c.tailPos:]...)
	return append(out, c.tail[:c.tailPos]...)
}

// omitted is the number of bytes dropped between head and tail.
func (c *capture) omitted() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total - int64(len(c.head)) - int64(len(c.tail))
}

// text returns head and tail, with a note where bytes were cut out.
func (c *capture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cut := c.total - int64(len(c.head)) - int64(len(c.tail))
	tail := c.tailBytes()
	if cut == 0 {
		return string(c.head) + string(tail)
	}
	return trimToRunes(string(c.head)) + fmt.Sprintf("\n[… %d bytes omitted …]\n", cut) + trimToRunes(string(tail))
}

// tailText returns only the last bytes of the stream.
func (c *capture) tailText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(c.tailBytes())
	if c.total > int64(len(c.tail)) {
		return trimToRunes(s)
	}
	return s
}
