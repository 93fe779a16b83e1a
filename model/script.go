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

// Script is a model that replays raw responses in order, each parsed
// exactly like a real model's text (ParseTurn: one Action, or a Turn of
// several), and records every call. It
// is safe for concurrent use, though a run calls it sequentially.
type Script struct {
	mu        sync.Mutex
	responses []string
	next      int
	// calls are recorded in blocks of doubling size, so that recording a
	// call never copies the earlier ones (a long run makes many).
	calls  [][]Call
	ncalls int
}

// NewScript returns a Script over responses.
func NewScript(responses ...string) *Script { return &Script{responses: responses} }

var (
	_ agent.Model     = (*Script)(nil)
	_ agent.TurnModel = (*Script)(nil)
)

// NextAction returns the next response as an action (ParseAction), an
// *agent.InvalidOutputError when it is malformed, or ErrExhausted.
func (s *Script) NextAction(ctx context.Context, task gen.Task, history agent.History) (agent.Action, error) {
	text, err := s.take(ctx, task, history)
	if err != nil {
		return agent.Action{}, err
	}
	return ParseAction(text)
}

// NextTurn returns the next response as a turn (ParseTurn: an Action or a
// Turn), an *agent.InvalidOutputError when it is malformed, or
// ErrExhausted. agent.Run calls NextTurn.
func (s *Script) NextTurn(ctx context.Context, task gen.Task, history agent.History) (agent.Turn, error) {
	text, err := s.take(ctx, task, history)
	if err != nil {
		return agent.Turn{}, err
	}
	return ParseTurn(text)
}

// take records a call and returns the next response.
func (s *Script) take(ctx context.Context, task gen.Task, history agent.History) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(Call{Task: task, History: history})
	if s.next >= len(s.responses) {
		return "", fmt.Errorf("%w (after %d responses)", ErrExhausted, len(s.responses))
	}
	text := s.responses[s.next]
	s.next++
	return text, nil
}

func (s *Script) record(c Call) {
	if n := len(s.calls); n == 0 || len(s.calls[n-1]) == cap(s.calls[n-1]) {
		s.calls = append(s.calls, make([]Call, 0, 16<<min(n, 12)))
	}
	last := &s.calls[len(s.calls)-1]
	*last = append(*last, c)
	s.ncalls++
}

// Calls returns the requests received so far, in order.
func (s *Script) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ncalls == 0 {
		return nil
	}
	out := make([]Call, 0, s.ncalls)
	for _, block := range s.calls {
		out = append(out, block...)
	}
	return out
}
