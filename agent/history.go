package agent

import (
	"fmt"
	"iter"
	"maps"
	"math/bits"

	"github.com/specloop/specloop/gen"
)

// Item is one entry of a run's history: exactly one field is set.
type Item struct {
	ToolCall    *gen.ToolCall
	Finish      *gen.Finish
	Observation *gen.Observation
	Feedback    *gen.ModelFeedback
}

// Wire returns the item in the spec's HistoryItem form.
func (it Item) Wire() (gen.HistoryItem, error) {
	var w gen.HistoryItem
	var err error
	switch {
	case it.ToolCall != nil:
		err = w.FromToolCall(*it.ToolCall)
	case it.Finish != nil:
		err = w.FromFinish(*it.Finish)
	case it.Observation != nil:
		err = w.FromObservation(*it.Observation)
	case it.Feedback != nil:
		err = w.FromModelFeedback(*it.Feedback)
	}
	return w, err
}

// History is a read-only view of a run's history, as a model sees it. It is
// cheap to pass and to keep: it never copies the run's history, and a view
// never changes after it was handed out (the loop only appends past its end).
// At returns copies, so a model cannot change what the loop recorded.
type History struct {
	segs [][]Item // the log's segments when the view was taken (see historyLog)
	n    int
}

// NewHistory returns a history of items, for tests and custom loops.
func NewHistory(items ...Item) History {
	var l historyLog
	for _, it := range items {
		l.add(it)
	}
	return l.view()
}

// Len returns the number of items.
func (h History) Len() int { return h.n }

// At returns a copy of item i.
func (h History) At(i int) Item {
	if i < 0 || i >= h.n {
		panic(fmt.Sprintf("agent: History.At(%d) out of range [0:%d]", i, h.n))
	}
	s, j := locate(i)
	return h.segs[s][j].clone()
}

// All iterates over copies of the items in order.
func (h History) All() iter.Seq2[int, Item] {
	return func(yield func(int, Item) bool) {
		i := 0
		for _, seg := range h.segs {
			for j := range seg {
				if i == h.n {
					return
				}
				if !yield(i, seg[j].clone()) {
					return
				}
				i++
			}
		}
	}
}

// Items returns copies of all items.
func (h History) Items() []Item {
	out := make([]Item, 0, h.n)
	for _, it := range h.All() {
		out = append(out, it)
	}
	return out
}

// historyLog is a run's history as the loop records it: items in segments
// that double in size (firstSegment items, then twice as many, ...).
// Appending never moves an item, so a view (a History) shares the segments
// with the log and with every other view, however long the run: the
// history costs the memory of its items once, not again for each copy a
// growing slice would leave behind in the views that models keep. Items
// below a view's length are never written again, and a new segment is only
// ever appended to the list of segments, so views need no locking.
type historyLog struct {
	segs [][]Item
	n    int
}

// firstSegment is the size of the first segment; it is a power of two.
const firstSegment = 16

// locate returns the segment of item i and its index there: segment s
// holds the items from firstSegment*(2^s-1) on.
func locate(i int) (s, j int) {
	s = bits.Len(uint(i/firstSegment+1)) - 1
	return s, i - firstSegment*(1<<s-1)
}

func (l *historyLog) add(it Item) {
	s, j := locate(l.n)
	if s == len(l.segs) {
		l.segs = append(l.segs, make([]Item, firstSegment<<s))
	}
	l.segs[s][j] = it
	l.n++
}

// view returns the history so far.
func (l *historyLog) view() History {
	return History{segs: l.segs[:len(l.segs):len(l.segs)], n: l.n}
}

func (it Item) clone() Item {
	switch {
	case it.ToolCall != nil:
		c := *it.ToolCall
		c.Arguments = cloneMap(c.Arguments)
		if c.CallId != nil {
			id := *c.CallId
			c.CallId = &id
		}
		return Item{ToolCall: &c}
	case it.Finish != nil:
		c := *it.Finish
		return Item{Finish: &c}
	case it.Observation != nil:
		c := *it.Observation
		if c.Data != nil {
			d := cloneMap(*c.Data)
			c.Data = &d
		}
		if c.CallId != nil {
			id := *c.CallId
			c.CallId = &id
		}
		if c.ErrorCode != nil {
			code := *c.ErrorCode
			c.ErrorCode = &code
		}
		return Item{Observation: &c}
	case it.Feedback != nil:
		c := *it.Feedback
		return Item{Feedback: &c}
	}
	return Item{}
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneMap(v)
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = cloneValue(v[i])
		}
		return out
	}
	return v
}
