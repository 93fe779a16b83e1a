package runner

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// Create accepts a run: it validates what the spec cannot (workspace,
// model, check, MCP servers), reserves a place in the queue, records the
// run durably and queues it. It returns once the run is on disk. ctx
// carries the trace context that becomes the parent of the run's span.
func (s *Runner) Create(ctx context.Context, body gen.CreateRunRequest) (gen.Run, error) {
	return s.create(ctx, Spec{CreateRunRequest: body}, nil)
}

// create accepts run sp, which continues prev when prev is set (Continue
// reserved it).
func (s *Runner) create(ctx context.Context, sp Spec, prev *run) (gen.Run, error) {
	if s.closing.Load() {
		return gen.Run{}, errUnavailable
	}
	body := sp.CreateRunRequest
	sp.ApprovalTimeout = s.cfg.ApprovalTimeout
	s.serversPart(&sp)
	if body.Check != nil && !s.cfg.AllowCommands {
		return gen.Run{}, badField("/check", "completion checks need a server started with --allow-commands (specloop serve)")
	}
	if body.Setup != nil && !s.cfg.AllowCommands {
		return gen.Run{}, badField("/setup", "setup commands need a server started with --allow-commands (specloop serve)")
	}
	if _, err := pickMCP(sp.MCPNames(), s.cfg.MCPServers); err != nil {
		return gen.Run{}, err
	}
	m, err := s.cfg.Models(body.Model)
	if err != nil {
		return gen.Run{}, badField("/model/provider", "%s", textclip.Clip(err.Error(), 300))
	}
	if body.RepoUrl != nil {
		switch {
		case !sp.Isolated():
			return gen.Run{}, badField("/repo_url", "a repository URL needs isolation worktree: the run works in a work tree of the clone")
		case body.Workspace != nil:
			return gen.Run{}, badField("/repo_url", "names the repository instead of workspace: give one of them")
		}
		if err := s.cfg.Clones.Check(*body.RepoUrl); err != nil {
			return gen.Run{}, err
		}
	}
	if body.Workspace != nil && inIsolated(path.Clean(*body.Workspace)) {
		return gen.Run{}, badField("/workspace", "names the work trees of isolated runs, which only their runs work in")
	}
	// The embedded engine makes an isolated run's work tree now, and the
	// run works in it; an engine's workers make it on their root when
	// they open the run (and the run is not serialized with the others of
	// its workspace).
	if sp.Isolated() && s.cfg.Engine == nil {
		wt, err := s.isolate(ctx, body.Workspace, body.RepoUrl, body.Commit)
		if err != nil {
			return gen.Run{}, err
		}
		sp.CreateRunRequest.Workspace, body.Workspace = &wt, &wt
	}
	wsName, ws, err := s.holdWorkspace(body.Workspace)
	if err != nil {
		s.dropIsolated(deref(body.Workspace))
		return gen.Run{}, err
	}
	if sp.Isolated() && s.cfg.Engine != nil {
		ws.key = "isolated:" + agent.NewRunID()
	}
	sp.Workspace = orNil(wsName)
	if body.ApprovalTimeoutSeconds != nil {
		sp.ApprovalTimeout = time.Duration(*body.ApprovalTimeoutSeconds) * time.Second
	}
	if err := s.sched.admit(); err != nil {
		s.releaseWorkspace(ws)
		s.dropIsolated(wsName)
		return gen.Run{}, err
	}
	r := &run{workspace: wsName, status: gen.RunStatusQueued}
	if prev != nil {
		r.continues, r.conversation = prev.id, prev.conversationID()
	}
	s.runs.mu.Lock()
	for r.id == "" || s.runs.byID[r.id] != nil {
		r.id = agent.NewRunID()
	}
	r.created = s.runs.stamp()
	s.runs.mu.Unlock()
	sp.ID = r.id
	j := s.newJob(ctx, r, sp, m, ws, &liveEvents{})
	r.job = j
	if sp.KeepsTranscript() {
		r.taskLine = s.taskLine(sp.Asked())
		if err := s.store.keepRequest(&sp); err != nil {
			s.log.Warn("keep a run's request for a resume or a follow-up", "run", r.id, "err", err)
		}
	}
	e := &entry{Op: opCreated, ID: r.id, Time: r.created, Workspace: wsName, Task: trace.Summary(sp.Asked()), TaskLine: r.taskLine, MaxSteps: sp.Options().MaxSteps,
		Continues: r.continues, Conversation: r.conversation}
	line, err := jsonLine(e)
	if err == nil {
		err = s.store.append(line, true)
	}
	if err != nil {
		s.sched.release()
		s.releaseWorkspace(ws)
		s.dropIsolated(wsName)
		j.cancel(err)
		s.log.Error("record a new run", "err", err)
		return gen.Run{}, &Error{Kind: Internal, Detail: "the run could not be recorded"}
	}
	s.runs.mu.Lock()
	s.runs.add(r)
	if prev != nil {
		prev.next = r.id
	}
	view := r.view()
	s.runs.mu.Unlock()
	s.sched.enqueue(r, ws.key)
	return view, nil
}

// newJob returns the job of run r, accepted as sp, with model m in
// workspace ws, its trace's events so far, its own context and, when sp
// asks for approvals, an approval gate; ctx carries the trace context
// that becomes the parent of the run's span.
func (s *Runner) newJob(ctx context.Context, r *run, sp Spec, m agent.Model, ws *heldWorkspace, events *liveEvents) *job {
	j := &job{spec: sp, model: m, ws: ws, events: events, telemetry: runTelemetry(ctx, sp.Model)}
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	if sp.Options().ApprovalPolicy != "" {
		j.gate = newApprovalGate(s, r, sp.ApprovalTimeout)
	}
	return j
}

// taskLine is what the runs list shows of a task (Run.task_line): its
// first line that is not blank, redacted as the transcript is (the whole
// prompt, so that a secret across lines is caught), cut at the spec's
// length.
func (s *Runner) taskLine(prompt string) string {
	text, _ := transcript.NewRedactor(os.Environ(), s.cfg.Secrets...).Text(prompt)
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return textclip.Head(strings.TrimSpace(line), gen.MaxLengthRunTaskLine)
}

// holdWorkspace resolves a run's workspace. The embedded engine's is
// opened now and held until the run ends: the run works in the directory
// its name resolves to at acceptance. An Engine's runs work on its
// workers, which open the workspace under their own root: the name is only
// validated here, and runs are serialized per name.
func (s *Runner) holdWorkspace(name *string) (string, *heldWorkspace, error) {
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
func (s *Runner) releaseWorkspace(h *heldWorkspace) {
	if h != nil && h.root != nil {
		s.ws.release(h)
	}
}

var errNoRun = &Error{Kind: NotFound, Detail: "no run has this id"}

// Get returns run id, with its result once finished.
func (s *Runner) Get(id string) (gen.Run, error) {
	if err := s.known(id); err != nil {
		return gen.Run{}, err
	}
	v, ok := s.runs.get(id)
	if !ok {
		return gen.Run{}, errNoRun
	}
	return v, nil
}

// List returns up to limit runs, newest first, older than the cursor (""
// for the first page), only those with status when it is set; next is the
// cursor of the next page, "" after the last.
func (s *Runner) List(status *gen.RunStatus, limit int, cursor string) (runs []gen.Run, next string, err error) {
	if ei := s.index(); ei != nil {
		return s.listIndex(ei, status, limit, cursor)
	}
	return s.runs.list(status, limit, cursor)
}

// Cancel cancels a queued run at once, or asks a running run to stop; it
// then ends with exit reason cancelled. A finished run cannot be cancelled
// (Conflict).
func (s *Runner) Cancel(id string) (gen.Run, error) {
	r, j, status, err := s.inFlight(id)
	if err != nil {
		return gen.Run{}, err
	}
	if status == gen.RunStatusQueued && s.sched.dequeue(r) {
		s.cancelQueued(r, errCancelRequested)
	} else {
		j.cancel(errCancelRequested)
	}
	v, _ := s.runs.get(r.id)
	return v, nil
}

// inFlight returns run id, its job and its status; the error is NotFound
// for an unknown run and Conflict for a finished one.
func (s *Runner) inFlight(id string) (*run, *job, gen.RunStatus, error) {
	if err := s.known(id); err != nil {
		return nil, nil, "", err
	}
	s.runs.mu.RLock()
	defer s.runs.mu.RUnlock()
	r := s.runs.byID[id]
	switch {
	case r == nil:
		return nil, nil, "", errNoRun
	case r.job == nil:
		return nil, nil, "", errRunFinished
	}
	return r, r.job, r.status, nil
}

// Events returns run id's trace events after position after (1-based) as
// Server-Sent Events: live while it runs, ending after run_finished. The
// stream stops when ctx is done or the reader is closed.
func (s *Runner) Events(ctx context.Context, id string, after int) (io.ReadCloser, error) {
	return s.openStream(ctx, id, cursor{pos: after})
}

// Statuses counts the runs by status.
func (s *Runner) Statuses() map[gen.RunStatus]int {
	n := map[gen.RunStatus]int{}
	s.runs.mu.RLock()
	defer s.runs.mu.RUnlock()
	for _, r := range s.runs.sorted {
		n[r.status]++
	}
	return n
}

// Transcript returns the entries of run id's transcript whose seq is past
// after, as written so far. A run that keeps none (its request said
// transcript false, or it has not started) is NotFound.
func (s *Runner) Transcript(id string, after int) ([]gen.TranscriptEntry, error) {
	if err := s.known(id); err != nil {
		return nil, err
	}
	path, err := s.transcriptPath(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Kind: NotFound, Detail: "the run keeps no transcript (its request said transcript false, it has not started, or it was removed after the server's transcript retention)"}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	log, err := transcript.Read(f)
	if err != nil {
		return nil, err
	}
	entries := log.Entries[min(after, len(log.Entries)):]
	if entries == nil {
		entries = []gen.TranscriptEntry{}
	}
	return entries, nil
}
