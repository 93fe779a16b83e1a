package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/transcript"
)

// Resuming after a crash. A run that keeps a transcript has its Spec kept
// beside it (DATA/transcripts/ID.request.json, 0600), written when the
// run is accepted. When the runner starts again, a run that was in flight
// goes on from its transcript instead of ending interrupted: its state is
// rebuilt by replaying the transcript (transcript.State: nothing is
// executed), the step in flight at the crash is cut from the transcript
// and the trace, and the run is queued again to go on live from its last
// complete step with its own model, tools and check; an approval it was
// waiting for is asked again. A run without its request or transcript, or
// whose transcript cannot be read or replayed, ends interrupted with the
// reason. Runs of an Engine keep the engine's own recovery (engine.go).

// requestPath is where run id's Spec is kept for a resume.
func (st *store) requestPath(id string) string {
	return filepath.Join(st.dir, transcriptsDir, id+".request.json")
}

// keepRequest writes sp beside its transcript, without a follow-up's
// history or conversation (the run log and the transcripts hold them).
func (st *store) keepRequest(sp *Spec) error {
	kept := *sp
	kept.Conversation, kept.System, kept.CustomTools = nil, "", nil // the server's: set again on a resume
	if f := sp.FollowUp; f != nil {
		kept.FollowUp = &agent.FollowUp{Message: f.Message}
	}
	data, err := json.Marshal(&kept)
	if err != nil {
		return err
	}
	path := st.requestPath(sp.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// readRequest reads run id's Spec as keepRequest kept it; an error
// wrapping fs.ErrNotExist means the run kept none.
func (st *store) readRequest(id string) (Spec, error) {
	var sp Spec
	data, err := os.ReadFile(st.requestPath(id))
	if err == nil {
		err = json.Unmarshal(data, &sp)
	}
	return sp, err
}

// prepareResume makes r, a run in flight when the runner stopped whose
// trace t (made appendable) has no run_finished, ready to go on: its job
// holds its spec, model, workspace and transcript, and its live events
// those of its trace. It returns why it cannot go on, or "".
func (s *Runner) prepareResume(r *run, t traceLog, byID map[string]*run) string {
	evs := t.evs
	sp, err := s.store.readRequest(r.id)
	if errors.Is(err, fs.ErrNotExist) {
		return "its request was not kept (it keeps no transcript)"
	}
	if err != nil {
		return "its request cannot be read: " + err.Error()
	}
	log, steps, err := transcript.Resume(s.store.transcriptPath(r.id))
	switch {
	case errors.Is(err, fs.ErrNotExist) && len(evs) == 0:
		log = nil // it never started: it starts now
	case errors.Is(err, fs.ErrNotExist):
		return "its transcript is missing"
	case err != nil:
		return "its transcript cannot be read: " + err.Error()
	}
	// The trace loses the step in flight too: it is run again.
	n := 0
	for n < len(evs) && evs[n].Step <= steps {
		n++
	}
	if err := s.cutTrace(r.id, n); err != nil {
		return err.Error()
	}
	if prev := byID[r.continues]; prev != nil {
		// A follow-up goes on from its conversation's history.
		if sp.Conversation, err = s.turns(chainOf(prev, byID)); err != nil {
			return "its conversation cannot be rebuilt: " + err.Error()
		}
	}
	s.serversPart(&sp) // the prompt its model is built with, the tools it offers
	m, err := s.cfg.Models(sp.Model)
	if err != nil {
		return "its model is not available: " + err.Error()
	}
	_, ws, err := s.holdWorkspace(sp.Workspace)
	if err != nil {
		return "its workspace cannot be opened"
	}
	j := s.newJob(context.Background(), r, sp, m, ws, t.live(n, false))
	j.resume = log
	if n > 0 && evs[0].EventType == gen.TraceEventTypeRunStarted {
		r.started = evs[0].Time.UTC()
	}
	r.job = j
	return ""
}

// cutTrace truncates run id's trace after its first n events.
func (s *Runner) cutTrace(id string, n int) error {
	path := s.store.tracePath(id)
	data, err := os.ReadFile(path)
	if err == nil {
		err = transcript.CutLines(path, data, n)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cut the trace: %w", err)
	}
	return nil
}

// resumeRuns queues the runs prepareResume made ready.
func (s *Runner) resumeRuns(runs []*run) {
	for _, r := range runs {
		if err := s.sched.admit(); err != nil {
			s.log.Error("resume a run", "run", r.id, "err", err)
			continue
		}
		s.sched.enqueue(r, r.job.ws.key)
	}
	if len(runs) > 0 {
		s.log.Info("resumed runs", "runs", len(runs))
	}
}
