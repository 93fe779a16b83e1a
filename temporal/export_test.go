package temporal

import "github.com/specloop/specloop/agent"

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
	ApprovalDecision = approvalDecision
)

const (
	ToolActivity   = toolActivity
	ApprovalSignal = approvalSignal
	PendingQuery   = pendingQuery
)

var (
	RunWorkflow        = runWorkflow
	RegisterActivities = registerActivities
)
