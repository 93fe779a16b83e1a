package model

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/specloop/specloop/agent"
)

// ErrExhausted is returned by a Script asked for more responses than it has.
var ErrExhausted = errors.New("script exhausted: no responses left")

// Script is a model that replays raw responses in order, each parsed
// exactly like a real model's text (ParseTurn: one Action, or a Turn of
// several), and records every request. It is safe for concurrent use,
// though a run calls it sequentially.
type Script struct {
	mu        sync.Mutex
	responses []string
	next      int
	calls     []agent.Request
}

// NewScript returns a Script over responses.
func NewScript(responses ...string) *Script { return &Script{responses: responses} }

var _ agent.Model = (*Script)(nil)

// Next returns the next response as a turn (ParseTurn: an Action or a
// Turn), an *agent.InvalidOutputError when it is malformed, or
// ErrExhausted.
func (s *Script) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	if err := ctx.Err(); err != nil {
		return agent.Turn{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, *req)
	if s.next >= len(s.responses) {
		return agent.Turn{}, fmt.Errorf("%w (after %d responses)", ErrExhausted, len(s.responses))
	}
	text := s.responses[s.next]
	s.next++
	return ParseTurn(text)
}

// Skip moves the script past its next n responses, as if n calls had
// taken them: a model rebuilt for each call of a run (a durable engine's)
// goes on where the run is.
func (s *Script) Skip(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = min(s.next+n, len(s.responses))
}

// Calls returns the requests received so far, in order.
func (s *Script) Calls() []agent.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Request(nil), s.calls...)
}
