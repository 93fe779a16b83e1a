package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// Engine executes runs somewhere else than in this process (package
// temporal: as Temporal workflows). The server still accepts, records,
// lists and streams the runs; the engine runs the loop and hands back the
// trace, event by event, from its durable storage.
type Engine interface {
	// Execute runs r to its end and returns its result. It calls event
	// for each trace event in order, with the event as its trace line
	// (JSON, no newline), once the event is durable. ctx is done when the
	// run must stop: CancelRequested(ctx) tells a client's cancellation
	// (cancel the run) from this server's shutdown (stop following it).
	// An error means the run could not be executed or followed; the
	// result then says how it ended as far as the server knows.
	Execute(ctx context.Context, r EngineRun, event func(ev *gen.TraceEvent, line []byte)) (gen.RunResult, error)
}

// EngineRun is a run as an Engine gets it.
type EngineRun struct {
	ID    string
	Task  gen.Task
	Model gen.ModelConfig
	// Workspace is the run's workspace under the workspace root, as the
	// request named it (cleaned); "" is the root.
	Workspace   string
	MaxSteps    int
	TokenBudget int64
	// Check is the completion check's command line; "" means none.
	Check string
	// ApprovalPolicy says which tool calls wait for a person's decision
	// ("" is never); ApprovalTimeout is how long one waits (0: the
	// default).
	ApprovalPolicy  gen.ApprovalPolicy
	ApprovalTimeout time.Duration
}

// EngineApprovals is an optional ability of an Engine: it hands a
// decision on a run's tool call waiting for approval to the run. With it,
// the approvals API (GET and POST /v1/runs/{id}/approvals) works for the
// engine's runs; the call's arguments are not listed (the trace the
// engine hands back does not hold them).
type EngineApprovals interface {
	Decide(ctx context.Context, runID, callID string, a agent.Approval) error
}

// CancelRequested reports whether ctx, the context of an Engine's
// Execute, was cancelled by a client's request (rather than by the
// server's shutdown).
func CancelRequested(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCancelRequested)
}

// executeOn runs r on engine e: the events it hands back go to the run's
// trace and live streams, and its result is recorded as an embedded run's.
func (s *Server) executeOn(e Engine, r *run) {
	j, started := s.start(r)

	var finished *gen.TraceEvent
	var finishedLine []byte
	tf, err := s.store.createTrace(r.id, s.cfg.TraceSync)
	var res gen.RunResult
	if err == nil {
		run := EngineRun{ID: r.id, Task: j.task, Model: j.modelConfig, Workspace: r.workspace,
			MaxSteps: j.maxSteps, TokenBudget: j.tokenBudget, Check: j.check, ApprovalPolicy: j.policy}
		if j.gate != nil {
			run.ApprovalTimeout = j.gate.timeout
		}
		res, err = e.Execute(j.ctx, run, func(ev *gen.TraceEvent, line []byte) {
			if _, werr := tf.Write(append(line[:len(line):len(line)], '\n')); werr != nil {
				s.log.Error("write a trace", "run", r.id, "err", werr)
			}
			if ev.EventType == gen.TraceEventTypeRunFinished {
				finished, finishedLine = ev, line
				return
			}
			if ev.EventType == gen.TraceEventTypeApprovalRequested && j.gate != nil && ev.CallId != nil && ev.ToolName != nil {
				s.forwardApproval(e, r, j, ev)
			}
			j.events.publishJSON(ev.EventType, line, false)
		})
		if finished != nil {
			if serr := tf.ended(); serr != nil {
				s.log.Error("sync a trace", "run", r.id, "err", serr)
			}
		}
		if cerr := tf.Close(); cerr != nil {
			s.log.Error("close a trace", "run", r.id, "err", cerr)
		}
	} else {
		err = fmt.Errorf("open the trace: %w", err)
		msg := err.Error()
		res = gen.RunResult{RunId: &r.id, ExitReason: gen.ExitReasonInternalError, Error: &msg}
	}
	if err != nil {
		s.log.Error("run failed in its engine", "run", r.id, "err", err)
	}
	if finished == nil {
		// No run_finished came back: record the result anyway and end
		// the trace and the live stream with the event they lack.
		ev := finishedEvent(r.id, nil, &res)
		ev.Time = time.Now().UTC()
		if err := s.appendEvent(r.id, &ev, s.cfg.TraceSync); err != nil {
			s.log.Error("trace a run's end", "run", r.id, "err", err)
		}
		finished, finishedLine = &ev, nil
	}
	s.finalize(r, j, started, res, finished, finishedLine)
}

// forwardApproval lists the call of an approval_requested event of an
// engine's run and hands the decision made through the API to the engine.
// A call the engine decided itself (its timeout) stays listed until the
// next request or the run's end; a late decision on it is ignored by the
// run.
func (s *Server) forwardApproval(e Engine, r *run, j *job, ev *gen.TraceEvent) {
	ea, ok := e.(EngineApprovals)
	if !ok {
		return
	}
	call := gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: *ev.ToolName, CallId: ev.CallId, Arguments: map[string]any{}}
	j.gate.requested(ev.Step, &call)
	go func() {
		a, err := j.gate.Approve(j.ctx, agent.ApprovalRequest{RunID: r.id, Step: ev.Step, Call: call})
		if err != nil {
			return // the run ended
		}
		if err := ea.Decide(context.WithoutCancel(j.ctx), r.id, *call.CallId, a); err != nil {
			s.log.Error("hand an approval to the engine", "run", r.id, "err", err)
		}
	}()
}
