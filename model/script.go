package model

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// ErrExhausted is returned by a Script asked for more responses than it has.
var ErrExhausted = errors.New("script exhausted: no responses left")

// Call is one request a Script received.
type Call struct {
	Task    gen.Task
	History agent.History
}

// Script is a model that replays raw responses in order, each parsed by
// ParseAction exactly like a real model's text, and records every call. It
// is safe for concurrent use, though a run calls it sequentially.
type Script struct {
	mu        sync.Mutex
	responses []string
	next      int
	calls     []Call
}

// NewScript returns a Script over responses.
func NewScript(responses ...string) *Script { return &Script{responses: responses} }

// NextAction returns the next response as an action, an
// *agent.InvalidOutputError when it is malformed, or ErrExhausted.
func (s *Script) NextAction(ctx context.Context, task gen.Task, history agent.History) (agent.Action, error) {
	if err := ctx.Err(); err != nil {
		return agent.Action{}, err
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Task: task, History: history})
	if s.next >= len(s.responses) {
		n := len(s.responses)
		s.mu.Unlock()
		return agent.Action{}, fmt.Errorf("%w (after %d responses)", ErrExhausted, n)
	}
	text := s.responses[s.next]
	s.next++
	s.mu.Unlock()
	return ParseAction(text)
}

// Calls returns the requests received so far, in order.
func (s *Script) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}
