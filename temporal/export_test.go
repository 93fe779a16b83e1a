package temporal

import (
	"context"
	"time"

	"github.com/specloop/specloop/agent"
)

// RequestTokens is the workflow's own estimate of req, without the model's
// overhead: a test model whose estimate is this plus a constant is sized
// alike by both engines.
func RequestTokens(req *agent.Request) int { return requestTokens(req.Task, req.History) }

// The workflow's and activities' wire names and types, for the tests that
// drive them through Temporal's test environment.
type (
	RunInput         = runInput
	RunRef           = runRef
	ToolInput        = toolInput
	RunEvents        = runEvents
	ApprovalDecision = approvalDecision
)

const (
	ToolActivity   = toolActivity
	PatchActivity  = patchActivity
	ApprovalSignal = approvalSignal
	PendingQuery   = pendingQuery
	EventsUpdate   = eventsUpdate
)

var (
	RunWorkflow        = runWorkflow
	RegisterActivities = registerActivities
)

// Events is run id's trace in the store, one JSON line each.
func (s *Store) Events(ctx context.Context, id string) ([]byte, error) {
	lines, err := s.events(ctx, id, 0)
	var data []byte
	for _, l := range lines {
		data = append(append(data, l...), '\n')
	}
	return data, err
}

// AppendEvents appends lines to run id's trace in the store from line
// from on, as the workers do.
func (s *Store) AppendEvents(id string, from int, lines [][]byte) error {
	return s.appendEvents(id, from, lines)
}

// SetReadEvents makes e read a run's trace lines with read instead of
// from its store: a test's faults between the follower and the store.
func (e *Engine) SetReadEvents(read func(ctx context.Context, id string, from int) ([][]byte, error)) {
	e.readEvents = read
}

// ReadEvents is how an Engine reads a run's trace lines from its store.
func (e *Engine) ReadEvents(ctx context.Context, id string, from int) ([][]byte, error) {
	return e.Store.events(ctx, id, from)
}

// SetAfter makes e wait before it retries on after instead of time.After.
func (e *Engine) SetAfter(after func(time.Duration) <-chan time.Time) { e.after = after }
