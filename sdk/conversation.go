package sdk

import (
	"context"
	"net/http"

	"github.com/specloop/specloop/gen"
)

// ContinueOption changes what the run Continue creates takes over from
// the run it continues.
type ContinueOption func(*gen.ContinueRunRequest)

// WithMaxSteps gives the next run a step budget of its own.
func WithMaxSteps(n int) ContinueOption {
	return func(r *gen.ContinueRunRequest) { r.MaxSteps = &n }
}

// WithModel makes the next run talk to another model.
func WithModel(m gen.ModelConfig) ContinueOption {
	return func(r *gen.ContinueRunRequest) { r.Model = &m }
}

// Continue sends a person's message to run runID, which has ended: the
// server creates the next run of its conversation, in the same workspace
// and with the same request, which starts from the history runID ended
// with and the message, with a fresh step budget. A run still going (or
// waiting for approval), one continued already or one that kept no
// transcript is an error matching ErrConflict. Wait for the returned run
// as for any other.
func (c *Client) Continue(ctx context.Context, runID, message string, opts ...ContinueOption) (gen.Run, error) {
	req := gen.ContinueRunRequest{Message: message}
	for _, o := range opts {
		o(&req)
	}
	resp, err := c.raw.ContinueRun(ctx, runID, req)
	return decode[gen.Run]("continue run", http.StatusCreated, resp, err)
}

// Conversation returns conversation id (its first run's id): its runs,
// oldest first, each continuing the one before.
func (c *Client) Conversation(ctx context.Context, id string) (gen.Conversation, error) {
	resp, err := c.raw.GetConversation(ctx, id)
	return decode[gen.Conversation]("get conversation", http.StatusOK, resp, err)
}
