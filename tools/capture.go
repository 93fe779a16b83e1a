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
	tail    []byte // its last tailMax bytes are the tail; it holds at most twice that
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
	p = p[max(0, len(p)-c.tailMax):]
	if len(c.tail)+len(p) > 2*c.tailMax {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-(c.tailMax-len(p)):]...)
	}
	c.tail = append(c.tail, p...)
	return n, nil
}

// tailBytes returns the kept tail.
func (c *capture) tailBytes() []byte { return c.tail[max(0, len(c.tail)-c.tailMax):] }

// omitted is the number of bytes dropped between head and tail.
func (c *capture) omitted() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total - int64(len(c.head)) - int64(len(c.tailBytes()))
}

// text returns head and tail, with a note where bytes were cut out.
func (c *capture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tailBytes()
	cut := c.total - int64(len(c.head)) - int64(len(tail))
	if cut == 0 {
		return string(c.head) + string(tail)
	}
	return trimToRunes(string(c.head)) + fmt.Sprintf("\n[… %d bytes omitted …]\n", cut) + trimToRunes(string(tail))
}

// cut reports whether bytes before the tail were dropped.
func (c *capture) cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(len(c.tailBytes()))
}

// tailText returns only the last bytes of the stream.
func (c *capture) tailText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(c.tailBytes())
	if c.total > int64(len(s)) {
		return trimToRunes(s)
	}
	return s
}
