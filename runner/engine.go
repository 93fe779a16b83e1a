package runner

import (
	"context"
	"errors"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// Engine executes runs somewhere else than in this process (package
// temporal: as Temporal workflows). The runner still accepts, records,
// lists and streams the runs; the engine runs the loop and hands back the
// trace, event by event, from its durable storage.
type Engine interface {
	// Execute runs sp to its end and returns its result. It calls event
	// for each trace event in order, with the event as its trace line
	// (JSON, no newline), once the event is durable. ctx is done when the
	// run must stop: CancelRequested(ctx) tells a client's cancellation
	// (cancel the run) from the runner's shutdown (stop following it).
	// An error means the run could not be executed or followed; the
	// result then says how it ended as far as the runner knows. sp's
	// Workspace is relative to the engine's own workspace root, and its
	// MCP servers are names the engine resolves on its own configuration.
	Execute(ctx context.Context, sp Spec, event func(ev *gen.TraceEvent, line []byte)) (gen.RunResult, error)
	// Follow is Execute for run id, which the engine was given before by
	// a runner that has stopped since (this one before a restart): it
	// follows the run instead of starting it, and hands over only its
	// events after the first seen ones, which the runner's trace already
	// holds. An engine that has no such run returns an error that wraps
	// ErrNoEngineRun.
	Follow(ctx context.Context, id string, seen int, event func(ev *gen.TraceEvent, line []byte)) (gen.RunResult, error)
}

// EngineTranscripts is an optional ability of an Engine whose runs keep
// their transcripts where the runner can read them: GET
// /v1/runs/{id}/transcript reads run id's from the file TranscriptPath
// names (no file: no transcript), and the retention of transcripts
// removes one with RemoveTranscript.
type EngineTranscripts interface {
	TranscriptPath(id string) (string, error)
	RemoveTranscript(id string) error
}

// ErrNoEngineRun is the error (wrapped) of an Engine asked to follow a
// run it never started; the server ends the run interrupted.
var ErrNoEngineRun = errors.New("the engine has no such run")

// EngineApprovals is an optional ability of an Engine: with it, the
// approvals API (GET and POST /v1/runs/{id}/approvals) works for the
// engine's runs. Decide hands a decision on a run's tool call waiting for
// approval to the run; PendingCall returns the tool call, with its
// arguments (which the trace the engine hands back does not hold), that
// run runID waits on, which must be the call callID.
type EngineApprovals interface {
	Decide(ctx context.Context, runID, callID string, a agent.Approval) error
	PendingCall(ctx context.Context, runID, callID string) (EnginePendingCall, error)
}

// EnginePendingCall is a tool call an Engine's run waits on for approval.
type EnginePendingCall struct {
	Call gen.ToolCall
	// Expires is when the wait times out; zero when unknown.
	Expires time.Time
}

// CancelRequested reports whether ctx, the context of an Engine's
// Execute, was cancelled by a client's request (rather than by the
// server's shutdown).
func CancelRequested(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCancelRequested)
}

// executeOn runs r on engine e: the events it hands back go to the run's
// trace tf and live streams, and its result is recorded as an embedded
// run's; openErr is why tf could not be opened. An attached run (one the
// engine ran before this server started) is followed where its trace
// stopped.
func (s *Runner) executeOn(e Engine, r *run, j *job, started time.Time, tf *traceFile, openErr error) {
	var finished *gen.TraceEvent
	var finishedLine []byte
	// The run's metrics and spans come from its durable events, as the
	// engine hands them over (an attached run's earlier events were
	// counted by the server that saw them).
	// An adopted run's are the accepting server's to count.
	tel := s.cfg.Telemetry
	if j.adopted {
		tel = nil
	}
	obs := tel.Observe(j.telemetry, nil)
	var res gen.RunResult
	err := openErr
	if err != nil {
		res = internalError(r.id, err)
	} else {
		event := func(ev *gen.TraceEvent, line []byte) {
			if _, werr := tf.Write(append(line[:len(line):len(line)], '\n')); werr != nil {
				s.log.Error("write a trace", "run", r.id, "err", werr)
			}
			_ = obs.Emit(ev) // no next tracer: no error
			if ev.EventType == gen.TraceEventTypeRunFinished {
				finished, finishedLine = ev, line
				return
			}
			switch {
			case j.gate == nil || ev.CallId == nil:
			case ev.EventType == gen.TraceEventTypeApprovalRequested && ev.ToolName != nil:
				s.forwardApproval(e, r, j, ev)
			case ev.EventType == gen.TraceEventTypeApprovalDecided:
				j.gate.settled(*ev.CallId)
			}
			j.events.publishJSON(ev.EventType, line, false)
		}
		if j.attached {
			res, err = e.Follow(j.ctx, r.id, j.seen, event)
		} else {
			sp := j.spec
			s.runs.mu.RLock()
			v := r.view()
			s.runs.mu.RUnlock()
			sp.Listed = &v
			res, err = e.Execute(j.ctx, sp, event)
		}
		if finished != nil {
			if serr := tf.ended(); serr != nil {
				s.log.Error("sync a trace", "run", r.id, "err", serr)
			}
		}
	}
	if errors.Is(err, ErrNoEngineRun) {
		msg := interruptedError
		res, err = gen.RunResult{RunId: &r.id, ExitReason: gen.ExitReasonInterrupted, StepsUsed: res.StepsUsed, Error: &msg}, nil
	}
	if err != nil {
		s.log.Error("run failed in its engine", "run", r.id, "err", err)
	}
	if finished == nil {
		ev := finishedEvent(r.id, time.Now().UTC(), &res)
		if errors.Is(context.Cause(j.ctx), errShuttingDown) && res.ExitReason == gen.ExitReasonInterrupted {
			// The engine goes on with the run: leave its record and trace
			// open, for the next server to follow it (reattach), and end
			// only this server's streams.
			if err := j.events.publish(&ev, true); err != nil {
				s.log.Error("publish an event", "run", r.id, "err", err)
			}
			s.releaseWorkspace(j.ws)
			return
		}
		// No run_finished came back: record the result anyway and end
		// the trace (still open, unless it could not be opened) and the
		// live stream with the event they lack.
		var werr error
		if tf != nil {
			werr = errors.Join(tf.emit(&ev), tf.ended())
		} else {
			werr = s.appendEvent(r.id, &ev, s.cfg.TraceSync)
		}
		if werr != nil {
			s.log.Error("trace a run's end", "run", r.id, "err", werr)
		}
		_ = obs.Emit(&ev)
		finished = &ev
	}
	s.finalize(r, j, started, res, finished, finishedLine)
}

// reattach makes r, a run without a result in the run log whose trace t
// (made appendable) lacks its run_finished, an in-flight run again that
// the engine is still executing: its events are served again, and an
// approval it was waiting for is listed again, its decision handed to the
// engine. followAttached follows it once the server is up.
func (s *Runner) reattach(r *run, t traceLog) {
	evs := t.evs
	j := &job{attached: true, seen: len(evs), events: t.live(len(evs), false)}
	j.ctx, j.cancel = context.WithCancelCause(s.stop) // Shutdown's cancellation reaches a run adopted meanwhile
	// Whether the run asks for approvals is the engine's to know: every
	// attached run takes decisions.
	j.gate = newApprovalGate(s, r, s.cfg.ApprovalTimeout)
	var waiting *gen.TraceEvent // the approval request still waiting for a decision
	for i := range evs {
		switch ev := &evs[i]; {
		case ev.EventType == gen.TraceEventTypeApprovalRequested && ev.CallId != nil && ev.ToolName != nil:
			waiting = ev
		case ev.EventType == gen.TraceEventTypeApprovalDecided && waiting != nil && ev.CallId != nil && *ev.CallId == *waiting.CallId:
			waiting = nil
		}
	}
	r.status, r.job = gen.RunStatusRunning, j
	if len(evs) > 0 {
		r.started = evs[0].Time.UTC()
	} else {
		r.started = time.Now().UTC()
	}
	if waiting != nil {
		// Before the server serves: the run is waiting_for_approval and
		// lists the call with the engine's arguments the moment it is
		// listed at all, not once the goroutine that follows it ran.
		s.forwardApproval(s.cfg.Engine, r, j, waiting)
	}
}

// followAttached follows the runs reattach prepared, each in a goroutine
// the scheduler waits for at shutdown.
func (s *Runner) followAttached(runs []*run) {
	for _, r := range runs {
		s.sched.workers.Add(1)
		go func() {
			defer s.sched.workers.Done()
			if followHook != nil {
				followHook(r.id)
			}
			s.execute(r)
		}()
	}
}

// followHook, when set (by a test), is called first in the goroutine that
// follows an attached run.
var followHook func(runID string)

// SetFollowHook is for tests: it makes every runner call f(id) in the
// goroutine that follows attached run id, before it does anything else;
// restore puts the previous hook back.
func SetFollowHook(f func(id string)) (restore func()) {
	prev := followHook
	followHook = f
	return func() { followHook = prev }
}

// pendingCallTimeout bounds the wait for an engine's answer about a call
// waiting for approval.
const pendingCallTimeout = 10 * time.Second

// forwardApproval lists the call of an approval_requested event of an
// engine's run with the run's gate, with the arguments and expiry the
// engine holds (from then on the run is waiting_for_approval and lists
// the call), and hands the decision made through the API to the engine,
// in a goroutine that ends with the run or with the call's
// approval_decided, when the engine decided it without this runner (its
// timeout, or another runner's decision); a decision that crosses it is
// ignored by the run.
func (s *Runner) forwardApproval(e Engine, r *run, j *job, ev *gen.TraceEvent) {
	ea, ok := e.(EngineApprovals)
	if !ok {
		return
	}
	call := gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: *ev.ToolName, CallId: ev.CallId, Arguments: map[string]any{}}
	var expires time.Time
	// The arguments come from the engine, not the trace. Without them the
	// call is still listed and can be decided. The engine's timer decides,
	// not the gate's timeout (which an attached run does not know).
	ctx, cancel := context.WithTimeout(j.ctx, pendingCallTimeout)
	p, err := ea.PendingCall(ctx, r.id, *ev.CallId)
	cancel()
	switch {
	case err != nil:
		s.log.Error("ask the engine for a call waiting for approval", "run", r.id, "err", err)
	case p.Call.CallId != nil && *p.Call.CallId == *ev.CallId && p.Call.ToolName == *ev.ToolName:
		call.Arguments, expires = p.Call.Arguments, p.Expires
	}
	j.gate.requested(ev.Step, &call, "", expires)
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
