package agent

import (
	"context"
	"errors"

	"github.com/specloop/specloop/gen"
)

// ContextSizer is an optional ability of a Model: its context window and an estimate of the request it would send.
type ContextSizer interface {
	ContextWindow() int                         // tokens
	RequestTokens(task gen.Task, h History) int // estimate of the whole request NextTurn/NextAction would send for h (system prompt, tools, task, history)
}

// Summarizer is an optional ability of a Model: one call that summarizes a history for compaction.
type Summarizer interface {
	Summarize(ctx context.Context, task gen.Task, h History) (summary string, usage *gen.Usage, err error)
}

// ErrContextLength is wrapped by a Model's error when the provider refused a request as over its context window;
// the loop then compacts once and retries instead of ending the run.
var ErrContextLength = errors.New("the request is over the model's context window")
