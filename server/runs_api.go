package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// CreateRun accepts a run: it validates what the spec cannot (workspace,
// model, check), reserves a place in the queue, records the run durably and
// queues it. The 202 is sent only once the run is on disk.
func (s *Server) CreateRun(ctx context.Context, req gen.CreateRunRequestObject) (gen.CreateRunResponseObject, error) {
	if s.closing.Load() {
		return nil, errUnavailable
	}
	body := req.Body
	if body == nil {
		return nil, problemf(http.StatusBadRequest, "the request body is required")
	}
	var check string
	if body.Check != nil {
		if !s.cfg.AllowCommands {
			return nil, badField("/check", "completion checks need a server started with commands allowed")
		}
		check = *body.Check
	}
	servers, err := s.mcpServers(body.McpServers)
	if err != nil {
		return nil, err
	}
	m, err := s.cfg.Models(body.Model, s.runTools)
	if err != nil {
		return nil, badField("/model/provider", "%s", clip(err.Error(), 300))
	}
	wsName, ws, err := s.holdWorkspace(body.Workspace)
	if err != nil {
		return nil, err
	}
	j := &job{task: body.Task, model: m, modelConfig: body.Model, mcp: servers, maxSteps: agent.DefaultMaxSteps, check: check, ws: ws, events: &liveEvents{}}
	if body.MaxSteps != nil {
		j.maxSteps = *body.MaxSteps
	}
	if body.TokenBudget != nil {
		j.tokenBudget = *body.TokenBudget
	}
	if body.MaxObservationBytes != nil {
		j.obsBytes = *body.MaxObservationBytes
	}
	if body.MaxObservationLines != nil {
		j.obsLines = *body.MaxObservationLines
	}
	j.telemetry = runTelemetry(ctx, body.Model)
	if err := s.sched.admit(); err != nil {
		s.releaseWorkspace(ws)
		return nil, err
	}
	r := &run{workspace: wsName, status: gen.RunStatusQueued, job: j}
	if p := body.ApprovalPolicy; p != nil && *p != gen.ApprovalPolicyNever {
		timeout := s.cfg.ApprovalTimeout
		if body.ApprovalTimeoutSeconds != nil {
			timeout = time.Duration(*body.ApprovalTimeoutSeconds) * time.Second
		}
		j.policy, j.gate = *p, newApprovalGate(s, r, timeout)
	}
	s.runs.mu.Lock()
	for r.id == "" || s.runs.byID[r.id] != nil {
		r.id = agent.NewRunID()
	}
	r.created = s.runs.stamp()
	s.runs.mu.Unlock()
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	j.telemetry = runTelemetry(ctx, body.Model)
	e := &entry{Op: opCreated, ID: r.id, Time: r.created, Workspace: wsName, Task: trace.Summary(body.Task.Prompt), MaxSteps: j.maxSteps}
	if err := s.store.append(e, true); err != nil {
		s.sched.release()
		s.releaseWorkspace(ws)
		j.cancel(err)
		s.log.Error("record a new run", "err", err)
		return nil, problemf(http.StatusInternalServerError, "the run could not be recorded")
	}
	s.runs.mu.Lock()
	s.runs.add(r)
	view := r.view()
	s.runs.mu.Unlock()
	s.sched.enqueue(r, ws.key)
	return gen.CreateRun202JSONResponse(view), nil
}

// holdWorkspace resolves a run's workspace. The embedded engine's is
// opened now and held until the run ends: the run works in the directory
// its name resolves to at acceptance. An Engine's runs work on its
// workers, which open the workspace under their own root: the name is only
// validated here, and runs are serialized per name.
func (s *Server) holdWorkspace(name *string) (string, *heldWorkspace, error) {
	if s.cfg.Engine == nil {
		return s.ws.hold(name, "/workspace")
	}
	clean, err := cleanWorkspace(name, "/workspace")
	if err != nil {
		return "", nil, err
	}
	if clean == "." {
		clean = ""
	}
	clean = filepath.ToSlash(clean)
	return clean, &heldWorkspace{key: "name:" + clean}, nil
}

// releaseWorkspace releases what holdWorkspace held.
func (s *Server) releaseWorkspace(h *heldWorkspace) {
	if h != nil && h.root != nil {
		s.ws.release(h)
	}
}

// GetRun returns a run with its result once finished.
func (s *Server) GetRun(_ context.Context, req gen.GetRunRequestObject) (gen.GetRunResponseObject, error) {
	v, ok := s.runs.get(req.RunId)
	if !ok {
		return nil, errNoRun
	}
	return gen.GetRun200JSONResponse(v), nil
}

// defaultPageSize is the runs in a page of listRuns when the request gives
// no limit: the spec's default for the parameter.
const defaultPageSize = gen.DefaultListRunsParamsLimit

var errNoRun = &problemError{status: http.StatusNotFound, detail: "no run has this id"}

// ListRuns returns one page of runs, newest first.
func (s *Server) ListRuns(_ context.Context, req gen.ListRunsRequestObject) (gen.ListRunsResponseObject, error) {
	limit := defaultPageSize
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	var cursor string
	if req.Params.Cursor != nil {
		cursor = *req.Params.Cursor
	}
	runs, next, err := s.runs.list(req.Params.Status, limit, cursor)
	if err != nil {
		return nil, err
	}
	out := gen.ListRuns200JSONResponse{Runs: runs}
	if next != "" {
		out.NextCursor = &next
	}
	return out, nil
}

// CancelRun cancels a queued run at once, or asks a running run to stop; it
// then ends with exit reason cancelled. A finished run cannot be cancelled.
func (s *Server) CancelRun(_ context.Context, req gen.CancelRunRequestObject) (gen.CancelRunResponseObject, error) {
	s.runs.mu.RLock()
	r := s.runs.byID[req.RunId]
	var j *job
	var queued bool
	if r != nil {
		j = r.job
		queued = r.status == gen.RunStatusQueued
	}
	s.runs.mu.RUnlock()
	switch {
	case r == nil:
		return nil, errNoRun
	case j == nil:
		return nil, &problemError{status: http.StatusConflict, detail: "the run has already finished"}
	}
	if queued && s.sched.dequeue(r, j.ws.key) {
		s.cancelQueued(r, errCancelRequested)
	} else {
		j.cancel(errCancelRequested)
	}
	v, _ := s.runs.get(r.id)
	return gen.CancelRun202JSONResponse(v), nil
}

// GetRunEvents streams the run's trace events as Server-Sent Events: live
// while it runs, ending after run_finished, resuming after the position
// given by ?after (which wins) or Last-Event-ID.
func (s *Server) GetRunEvents(ctx context.Context, req gen.GetRunEventsRequestObject) (gen.GetRunEventsResponseObject, error) {
	if _, ok := s.runs.get(req.RunId); !ok {
		return nil, errNoRun
	}
	after := 0
	switch {
	case req.Params.After != nil:
		after = *req.Params.After
	case req.Params.LastEventID != nil:
		n, err := strconv.Atoi(*req.Params.LastEventID)
		if err != nil || n < 0 {
			return nil, badField("Last-Event-ID", "header Last-Event-ID must be an event id: a non-negative integer")
		}
		after = n
	}
	pr, pw := io.Pipe()
	go s.stream(ctx, req.RunId, after, pw)
	return gen.GetRunEvents200TexteventStreamResponse{Body: pr}, nil
}
