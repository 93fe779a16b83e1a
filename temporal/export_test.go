package temporal

import (
	"context"

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
