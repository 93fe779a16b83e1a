package server

import (
	"cmp"
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// The run operations: each is its runner.Runner method, whose refusals
// (runner.Error) handleError answers as problems; the generated handler
// sends the response only without an error. A JSON body is never nil:
// request validation requires it.

// CreateRun accepts a run (runner.Runner.Create). The 202 is sent only
// once the run is on disk.
func (s api) CreateRun(ctx context.Context, req gen.CreateRunRequestObject) (gen.CreateRunResponseObject, error) {
	v, err := s.rn.Create(ctx, *req.Body)
	return gen.CreateRun202JSONResponse(v), err
}

// GetRun returns a run with its result once finished.
func (s api) GetRun(_ context.Context, req gen.GetRunRequestObject) (gen.GetRunResponseObject, error) {
	v, err := s.rn.Get(req.RunId)
	return gen.GetRun200JSONResponse(v), err
}

// defaultPageSize is the runs in a page of listRuns when the request gives
// no limit: the spec's default for the parameter.
const defaultPageSize = gen.DefaultListRunsParamsLimit

// ListRuns returns one page of runs, newest first.
func (s api) ListRuns(_ context.Context, req gen.ListRunsRequestObject) (gen.ListRunsResponseObject, error) {
	// The spec's minimum limit is 1: 0 is its absence.
	runs, next, err := s.rn.List(req.Params.Status, cmp.Or(deref(req.Params.Limit), defaultPageSize), deref(req.Params.Cursor))
	out := gen.ListRuns200JSONResponse{Runs: runs}
	if next != "" {
		out.NextCursor = &next
	}
	return out, err
}

// CancelRun cancels a queued run at once, or asks a running run to stop; it
// then ends with exit reason cancelled. A finished run cannot be cancelled.
func (s api) CancelRun(_ context.Context, req gen.CancelRunRequestObject) (gen.CancelRunResponseObject, error) {
	v, err := s.rn.Cancel(req.RunId)
	return gen.CancelRun202JSONResponse(v), err
}

// ContinueRun creates the run that continues a run that ended with a
// person's message (runner.Runner.Continue): the next turn of its
// conversation.
func (s api) ContinueRun(ctx context.Context, req gen.ContinueRunRequestObject) (gen.ContinueRunResponseObject, error) {
	v, err := s.rn.Continue(ctx, req.RunId, *req.Body)
	return gen.ContinueRun201JSONResponse(v), err
}

// GetConversation returns a conversation's runs, oldest first.
func (s api) GetConversation(_ context.Context, req gen.GetConversationRequestObject) (gen.GetConversationResponseObject, error) {
	c, err := s.rn.Conversation(req.ConversationId)
	return gen.GetConversation200JSONResponse(c), err
}

// GetRunEvents streams the run's trace events as Server-Sent Events: live
// while it runs, ending after run_finished, resuming after the position
// given by ?after (which wins) or Last-Event-ID. With ?content=true the
// transcript's entries come too (runner.ContentEvents), under the same
// auth as GET /v1/runs/{id}/transcript: the middleware's, which asks a
// server with a token for it and serves one without a token to loopback
// and allowed Host names only.
func (s api) GetRunEvents(ctx context.Context, req gen.GetRunEventsRequestObject) (gen.GetRunEventsResponseObject, error) {
	if _, err := s.rn.Get(req.RunId); err != nil {
		return nil, err
	}
	after, seq := deref(req.Params.After), 0
	if req.Params.After == nil && req.Params.LastEventID != nil {
		// "P", or "P:S" from a stream with content.
		p, q, hasSeq := strings.Cut(*req.Params.LastEventID, ":")
		n, err := strconv.Atoi(p)
		m := 0
		if err == nil && hasSeq {
			m, err = strconv.Atoi(q)
		}
		if err != nil || n < 0 || m < 0 {
			return nil, badField("Last-Event-ID", "header Last-Event-ID must be an event id: a non-negative integer, or two joined by a colon")
		}
		after, seq = n, m
	}
	var body io.ReadCloser
	var err error
	if deref(req.Params.Content) {
		body, err = s.rn.ContentEvents(ctx, req.RunId, after, seq)
	} else {
		body, err = s.rn.Events(ctx, req.RunId, after)
	}
	return gen.GetRunEvents200TexteventStreamResponse{Body: body}, err
}

// ListApprovals returns the run's tool calls waiting for a decision, with
// their arguments.
func (s api) ListApprovals(_ context.Context, req gen.ListApprovalsRequestObject) (gen.ListApprovalsResponseObject, error) {
	list, err := s.rn.Approvals(req.RunId)
	return gen.ListApprovals200JSONResponse{Approvals: list}, err
}

// DecideApproval approves or denies the run's pending call call_id.
func (s api) DecideApproval(_ context.Context, req gen.DecideApprovalRequestObject) (gen.DecideApprovalResponseObject, error) {
	v, err := s.rn.Decide(req.RunId, req.CallId, agent.Approval{Decision: req.Body.Decision, Reason: strings.Clone(deref(req.Body.Reason))})
	return gen.DecideApproval200JSONResponse(v), err
}

// GetRunTranscript returns the run's transcript entries, those after
// ?after when it is given.
func (s api) GetRunTranscript(_ context.Context, req gen.GetRunTranscriptRequestObject) (gen.GetRunTranscriptResponseObject, error) {
	entries, err := s.rn.Transcript(req.RunId, deref(req.Params.After))
	return gen.GetRunTranscript200JSONResponse{RunId: req.RunId, Entries: entries}, err
}
