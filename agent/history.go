package agent

import (
	"iter"
	"maps"
	"slices"

	"github.com/specloop/specloop/gen"
)

// Item is one entry of a run's history: exactly one field is set.
type Item struct {
	ToolCall    *gen.ToolCall
	Finish      *gen.Finish
	Observation *gen.Observation
	Feedback    *gen.ModelFeedback
	// UserMessage is a person's message in a conversation (Options.FollowUp).
	UserMessage *gen.UserMessage
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
	case it.UserMessage != nil:
		err = w.FromUserMessage(*it.UserMessage)
	}
	return w, err
}

// History is a read-only view of a run's history, as a model sees it. It is
// cheap to pass and to keep: it shares the loop's slice of items, clipped to
// its length, and the loop only ever appends past that length (compaction
// builds a new slice), so a view never changes after it was handed out. At
// returns copies, so a model cannot change what the loop recorded.
type History struct {
	items []Item
}

// NewHistory returns a history of items, for tests and custom loops.
func NewHistory(items ...Item) History {
	return History{items: slices.Clip(slices.Clone(items))}
}

// Len returns the number of items.
func (h History) Len() int { return len(h.items) }

// At returns a copy of item i; it panics, as indexing does, when i is
// out of range.
func (h History) At(i int) Item { return h.items[i].clone() }

// All iterates over copies of the items in order.
func (h History) All() iter.Seq2[int, Item] {
	return func(yield func(int, Item) bool) {
		for i, it := range h.items {
			if !yield(i, it.clone()) {
				return
			}
		}
	}
}

// Items returns copies of all items.
func (h History) Items() []Item {
	out := make([]Item, len(h.items))
	for i, it := range h.items {
		out[i] = it.clone()
	}
	return out
}

// historyLog is a run's history as the loop records it.
type historyLog struct {
	items []Item
}

func (l *historyLog) add(it Item) { l.items = append(l.items, it) }

// view returns the history so far, clipped so that appending to it can
// never write into the log.
func (l *historyLog) view() History { return History{items: slices.Clip(l.items)} }

func (it Item) clone() Item {
	switch {
	case it.ToolCall != nil:
		c := *it.ToolCall
		c.Arguments = cloneMap(c.Arguments)
		if c.CallId != nil {
			id := *c.CallId
			c.CallId = &id
		}
		c.Reasoning = cloneReasoning(c.Reasoning)
		return Item{ToolCall: &c}
	case it.Finish != nil:
		c := *it.Finish
		c.Reasoning = cloneReasoning(c.Reasoning)
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
	case it.UserMessage != nil:
		c := *it.UserMessage
		return Item{UserMessage: &c}
	}
	return Item{}
}

func cloneReasoning(r *[]gen.ReasoningBlock) *[]gen.ReasoningBlock {
	if r == nil {
		return nil
	}
	c := slices.Clone(*r)
	return &c
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
