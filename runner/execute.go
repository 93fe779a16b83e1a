package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
	"github.com/specloop/specloop/wiring"
)

// execute runs one run to its end, in this process or on the Engine; the
// scheduler calls it in its own goroutine once the run's workspace and a
// slot are free (followAttached for a run attached at start).
func (s *Runner) execute(r *run) {
	s.runs.mu.Lock()
	j := r.job
	if !j.attached { // an attached run is running (or waiting) since reattach
		r.status = gen.RunStatusRunning
	}
	if r.started.IsZero() { // a resumed or attached run keeps its start
		r.started = time.Now().UTC()
	}
	started := r.started
	s.runs.mu.Unlock()
	tf, err := s.store.createTrace(r.id, s.cfg.TraceSync)
	if err != nil {
		err = fmt.Errorf("open the trace: %w", err)
	} else {
		defer func() {
			if err := tf.Close(); err != nil {
				s.log.Error("close a trace", "run", r.id, "err", err)
			}
		}()
	}
	if s.cfg.Engine != nil {
		s.executeOn(s.cfg.Engine, r, j, started, tf, err)
		return
	}

	finalized := false // the run_finished the loop traced was recorded
	var res gen.RunResult
	if err != nil {
		res = internalError(r.id, err)
	} else {
		res, err = s.runAgent(r, j, tf, func(p agent.Progress) {
			// The observer runs right after the event was written: tf.last
			// is its line.
			if p.Event.EventType == gen.TraceEventTypeRunFinished && p.Result != nil {
				if err := tf.ended(); err != nil {
					s.log.Error("sync a trace", "run", r.id, "err", err)
				}
				finalized = true
				s.finalize(r, j, started, *p.Result, p.Event, tf.last)
				return
			}
			if p.Event.EventType == gen.TraceEventTypeApprovalRequested && j.gate != nil {
				j.gate.requested(p.Event.Step, p.ToolCall, p.ApprovalReason, time.Time{})
			}
			j.events.publishJSON(p.Event.EventType, tf.last, false)
		})
	}
	if err != nil && res.ExitReason == gen.ExitReasonInternalError {
		s.log.Error("run failed internally", "run", r.id, "err", err)
	}
	if !finalized {
		// run_finished could not be traced: record the result anyway and
		// end the live stream with the event the trace lacks.
		ev := finishedEvent(r.id, time.Now().UTC(), &res)
		var data []byte
		// A run whose setup failed has a trace, which ends as the Temporal
		// workflow's does: with run_finished.
		if res.ExitReason == gen.ExitReasonSetupFailed && tf.emit(&ev) == nil {
			data = tf.last
		}
		s.finalize(r, j, started, res, &ev, data)
	}
}

// internalError is the result of run id that err ended before or outside
// its loop.
func internalError(id string, err error) gen.RunResult {
	msg := err.Error()
	return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInternalError, Error: &msg}
}

// runAgent sets up the run's workspace, tools and check, runs its setup
// command and then the agent loop. A workspace or tools that cannot be
// set up end the run with internal_error, a setup command that fails
// with setup_failed.
func (s *Runner) runAgent(r *run, j *job, tf *traceFile, observe func(agent.Progress)) (gen.RunResult, error) {
	fail := func(err error) (gen.RunResult, error) { return internalError(r.id, err), err }
	sp := j.spec
	sp.Observer = observe
	sp.Live = func(l agent.Live) {
		if l.Text != "" {
			j.events.streamed(l.Step, l.Text)
		}
	}
	if j.gate != nil {
		sp.Approver = j.gate
	}
	host := s.host
	host.Root, host.TraceWriter = j.ws.root, tf
	host.TranscriptPath, host.TelemetryRun = s.store.transcriptPath(r.id), j.telemetry
	host.Waiting = func(holder string) {
		s.log.Info("waiting for another process's run in the workspace", "run", r.id, "holder", holder)
	}
	setup, err := Open(j.ctx, &sp, host)
	var we *wiring.Error
	if errors.As(err, &we) && we.Part == wiring.PartWorkspace {
		return fail(errors.New("the workspace cannot be opened"))
	}
	if err != nil {
		return fail(err)
	}
	defer setup.Close()
	// A resumed run is past its setup: it ran before the model's first
	// call, which the transcript records.
	if j.resume == nil {
		res, err := RunSetup(j.ctx, &sp, setup, host)
		if err != nil {
			return fail(err)
		}
		if res != nil && !res.Passed {
			return SetupFailed(r.id, *res), nil
		}
		j.setup = res // in the result finalize records
	}
	if j.resume != nil {
		st, err := transcript.State(j.ctx, j.resume, sp.Task, j.model, setup.Options)
		if err != nil {
			msg := interruptedError + "; it cannot go on from its transcript: " + err.Error()
			return gen.RunResult{RunId: &r.id, ExitReason: gen.ExitReasonInterrupted, Error: &msg}, nil
		}
		setup.Options.Resume = st
		// A scripted model goes on past the responses the run took.
		if sk, ok := j.model.(interface{ Skip(int) }); ok {
			sk.Skip(st.StepsUsed)
		}
	}
	return agent.Run(j.ctx, sp.Task, j.model, setup.Options)
}

// finalize records a run's end durably, then shows it: the record turns
// finished before run_finished reaches any stream, so a client that saw
// run_finished always gets the result.
// data is ev as written to the trace, or nil when it was not written.
func (s *Runner) finalize(r *run, j *job, started time.Time, res gen.RunResult, ev *gen.TraceEvent, data []byte) {
	res.RunId = &r.id
	if res.Setup == nil {
		res.Setup = j.setup
	}
	finished := time.Now().UTC()
	e := &entry{Op: opFinished, ID: r.id, Time: finished, Started: orNil(started), Result: &res}
	line, err := jsonLine(e)
	if err == nil {
		err = s.store.append(line, false)
	}
	if err != nil {
		// The trace still has run_finished; a restart recovers from it.
		s.log.Error("record a run's result", "run", r.id, "err", err)
	}
	// The record is the line read back, as a restart reads it: it keeps
	// nothing of the loop alive (the loop's result points into the loop,
	// and its strings may share memory with the model's raw output).
	var kept entry
	if json.Unmarshal(line, &kept) == nil && kept.Result != nil {
		res = *kept.Result
		res.RunId = &r.id
	}
	// The result holds the patch: an isolated run's work tree has done its
	// work, and is gone before the run shows finished.
	s.dropIsolated(r.workspace)
	s.runs.mu.Lock()
	r.status = gen.RunStatusFinished
	r.finished = finished
	r.result = &res
	r.job = nil
	s.runs.mu.Unlock()
	j.cancel(nil)
	if data != nil {
		j.events.publishJSON(ev.EventType, data, true)
	} else if err := j.events.publish(ev, true); err != nil {
		s.log.Error("publish an event", "run", r.id, "err", err)
	}
	s.releaseWorkspace(j.ws)
}

// cancelQueued ends a run that never started: its trace gets only
// run_finished, and its record says cancelled.
func (s *Runner) cancelQueued(r *run, cause error) {
	s.runs.mu.RLock()
	j := r.job
	s.runs.mu.RUnlock()
	if j == nil {
		return
	}
	j.cancel(cause)
	msg := cause.Error()
	res := gen.RunResult{RunId: &r.id, ExitReason: gen.ExitReasonCancelled, StepsUsed: 0, Error: &msg}
	ev := finishedEvent(r.id, time.Now().UTC(), &res)
	if err := s.appendEvent(r.id, &ev, s.cfg.TraceSync); err != nil {
		s.log.Error("trace a cancelled run", "run", r.id, "err", err)
	}
	if tel := s.cfg.Telemetry; tel != nil && tel.Metrics != nil {
		tel.Metrics.RunEnded(&ev) // a run that ended without its loop
	}
	s.finalize(r, j, time.Time{}, res, &ev, nil)
}

// appendEvent appends one event to run id's trace, creating it.
func (s *Runner) appendEvent(id string, ev *gen.TraceEvent, policy trace.SyncPolicy) error {
	tf, err := s.store.createTrace(id, policy)
	if err != nil {
		return err
	}
	return errors.Join(tf.emit(ev), tf.ended(), tf.Close())
}

// interruptedError is the error of a run the server stopped in flight.
const interruptedError = "the server stopped while the run was in flight"

// recover rebuilds the runs from the run log; runs without a result get
// one from their trace's run_finished, go on from their transcript
// (resume.go), or end interrupted.
func (s *Runner) recover(entries []entry) error {
	byID := map[string]*run{}
	var runs []*run
	for i := range entries {
		e := &entries[i]
		switch r := byID[e.ID]; {
		case e.Op == opCreated && r == nil && ident.Plain(e.ID):
			r = &run{id: e.ID, created: e.Time.UTC(), workspace: e.Workspace, taskLine: e.TaskLine, status: gen.RunStatusQueued, continues: e.Continues, conversation: e.Conversation}
			byID[e.ID] = r
			if prev := byID[e.Continues]; prev != nil {
				prev.next = e.ID
			}
			runs = append(runs, r)
		case e.Op == opFinished && r != nil && r.status != gen.RunStatusFinished && e.Result != nil:
			r.status = gen.RunStatusFinished
			r.finished = e.Time.UTC()
			if e.Started != nil {
				r.started = e.Started.UTC()
			}
			r.result = e.Result
		}
	}
	var fixes []byte
	var interrupted int
	for _, r := range runs {
		if r.status == gen.RunStatusFinished {
			continue
		}
		t, err := s.recoverTrace(r.id)
		if err != nil {
			return err
		}
		why := ""
		switch {
		case t.finished():
		case s.cfg.Engine != nil:
			// The engine may still be executing it: follow it again.
			s.reattach(r, t)
			s.attached = append(s.attached, r)
			continue
		default:
			if why = s.prepareResume(r, t, byID); why == "" {
				s.resumed = append(s.resumed, r)
				continue
			}
		}
		if !t.finished() {
			interrupted++
		}
		line, err := s.recoverRun(r, t, why)
		if err != nil {
			return err
		}
		fixes = append(fixes, line...)
		s.dropIsolated(r.workspace) // an isolated run that will not go on
	}
	if len(fixes) > 0 {
		if err := s.store.append(fixes, true); err != nil {
			return err
		}
	}
	slices.SortFunc(runs, compareRuns)
	for _, r := range runs {
		s.runs.add(r)
	}
	if n := len(runs); n > 0 {
		s.runs.last = runs[n-1].created
		s.log.Info("recovered runs", "runs", len(runs), "interrupted", interrupted, "attached", len(s.attached))
	}
	return nil
}

// recoverRun settles a run that has no result in the log, whose trace
// (made appendable) is t: from its trace's run_finished if it has one, or
// as interrupted (why says why it could not go on from its transcript),
// appending run_finished to the trace so that its event stream ends. It
// returns the run log's line of its result.
func (s *Runner) recoverRun(r *run, t traceLog, why string) ([]byte, error) {
	evs := t.evs
	if n := len(evs); n > 0 && evs[0].EventType == gen.TraceEventTypeRunStarted {
		r.started = evs[0].Time.UTC()
	}
	if t.finished() {
		last := evs[len(evs)-1]
		res := gen.RunResult{RunId: &r.id, ExitReason: deref(last.ExitReason), StepsUsed: deref(last.StepsUsed), Error: last.Error, Usage: last.Usage}
		r.status, r.finished, r.result = gen.RunStatusFinished, last.Time.UTC(), &res
	} else {
		steps := 0
		for _, ev := range evs {
			steps = max(steps, ev.Step)
		}
		msg := interruptedError
		if why != "" {
			msg += "; it cannot go on: " + why
		}
		res := gen.RunResult{RunId: &r.id, ExitReason: gen.ExitReasonInterrupted, StepsUsed: steps, Error: &msg}
		ev := finishedEvent(r.id, time.Now().UTC(), &res)
		if err := s.appendEvent(r.id, &ev, trace.SyncEveryEvent); err != nil {
			return nil, fmt.Errorf("run %s: %w", r.id, err)
		}
		r.status, r.finished, r.result = gen.RunStatusFinished, ev.Time, &res
	}
	return jsonLine(&entry{Op: opFinished, ID: r.id, Time: r.finished, Started: orNil(r.started), Result: r.result})
}

// recoverTrace reads run id's trace and, unless it ends with
// run_finished, makes it appendable: a torn last line (or, after damage,
// everything from the first invalid line on) is cut, and a last line that
// lacks its newline gets one.
func (s *Runner) recoverTrace(id string) (traceLog, error) {
	path := s.store.tracePath(id)
	t, data, bad, err := readTrace(path)
	switch {
	case err != nil || t.finished():
	case bad > 0:
		err = transcript.CutLines(path, data, bad-1)
	case len(data) > 0 && data[len(data)-1] != '\n':
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			_, err = f.Write([]byte("\n"))
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		return t, fmt.Errorf("run %s: read the trace or make it appendable: %w", id, err)
	}
	return t, nil
}
