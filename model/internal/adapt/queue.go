package adapt

import (
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// Queue turns a reply with several tool calls into consecutive steps: the
// adapter returns the first action and queues the rest; each later
// NextAction gets the next queued action without asking the provider, as
// long as the history shows the previously returned call was executed (the
// call followed by its observation, and nothing else). Any other history —
// feedback, a rejected finish, another run — drops the queue, and the
// provider is asked again. A queued finish ends the queue.
//
// A Queue is safe for concurrent use; a run calls it sequentially.
type Queue struct {
	mu      sync.Mutex
	pending []agent.Action
	want    int           // the history length at which the next queued action is due
	last    *gen.ToolCall // the call returned last
}

// Start returns the first of actions and queues the rest for a run whose
// history is h.
func (q *Queue) Start(h agent.History, actions []agent.Action) agent.Action {
	q.mu.Lock()
	defer q.mu.Unlock()
	first := actions[0]
	q.pending = nil
	if first.ToolCall != nil && len(actions) > 1 {
		q.pending = append(q.pending, actions[1:]...)
		q.want = h.Len() + 2
		q.last = first.ToolCall
	}
	return first
}

// Next returns the next queued action when h shows the previous call ran.
func (q *Queue) Next(h agent.History) (agent.Action, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return agent.Action{}, false
	}
	n := h.Len()
	if n != q.want || !sameCall(h.At(n-2).ToolCall, q.last) || h.At(n-1).Observation == nil {
		q.pending = nil
		return agent.Action{}, false
	}
	next := q.pending[0]
	q.pending = q.pending[1:]
	if next.ToolCall == nil {
		q.pending = nil
	} else {
		q.want = n + 2
		q.last = next.ToolCall
	}
	return next, true
}

// Len returns how many actions are queued.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

func sameCall(got, want *gen.ToolCall) bool {
	if got == nil || want == nil || got.ToolName != want.ToolName {
		return false
	}
	if (got.CallId == nil) != (want.CallId == nil) {
		return false
	}
	return got.CallId == nil || *got.CallId == *want.CallId
}
