package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/transcript"
	"github.com/specloop/specloop/wiring"
)

// runRef names a run and what its worker needs to open it again after a
// restart.
type runRef struct {
	RunID     string
	Workspace string
	// From and Commit are an isolated run's (isolation worktree): the
	// workspace and revision its work tree, Workspace, is made of;
	// RepoURL, when set, the repository instead of From.
	From    string `json:",omitempty"`
	Commit  string `json:",omitempty"`
	RepoURL string `json:",omitempty"`
	Check   string
	// MCPServers names the run's MCP servers, among the worker's
	// Activities.Setup.MCPServers.
	MCPServers []string `json:",omitempty"`
}

// eventBatch is trace lines for the store: lines From, From+1, … of the
// run's trace, and entries EntriesFrom, EntriesFrom+1, … of its
// transcript (none when the run keeps none).
type eventBatch struct {
	From        int
	Lines       [][]byte
	EntriesFrom int                   `json:",omitempty"`
	Entries     []gen.TranscriptEntry `json:",omitempty"`
}

// openOutput is what the Open activity learnt about the run's setup.
type openOutput struct {
	// HostQueue is the task queue of the workers that hold the workspace.
	HostQueue    string
	Tools        []gen.ToolSpec
	ToolsSandbox *gen.SandboxInfo
	CheckSandbox *gen.SandboxInfo
	// Task is the run's task with its project docs as its instructions,
	// and ProjectDocs the files read (runner.Open).
	Task        gen.Task
	ProjectDocs []gen.ProjectDoc `json:",omitempty"`
	// History is a follow-up's: the history its conversation's last run
	// ended with (runner.Open).
	History []agent.Item `json:",omitempty"`
	// ContextWindow is the model's context window, 0 when the model is
	// no agent.ContextSizer (the run then compacts only when the
	// provider refuses a request as too long).
	ContextWindow int `json:",omitempty"`
	// RequestOverhead is the tokens the model's requests carry beyond the
	// workflow's own estimate of them (requestTokens): the system prompt,
	// the tools, the provider's framing. The workflow keeps it current
	// from the Model activity's replies.
	RequestOverhead int `json:",omitempty"`
	// Setup is the run of the spec's setup command (runner.RunSetup); the
	// workflow keeps it in its state (progress.Opened), so that it runs
	// once, before the model's first call, and never again once it passed
	// (not after a worker restart, nor a continue-as-new).
	Setup *gen.CheckResult `json:",omitempty"`
}

// modelInput is one model call: the history so far goes by value (the
// DataConverter stores it out of the workflow's history when it is large).
type modelInput struct {
	runEvents
	Task      gen.Task
	Model     gen.ModelConfig
	Tools     []gen.ToolSpec
	Calls     int // the model calls of the run before this one
	History   []agent.Item
	RecordRaw bool
	// Summarize asks for a summary of History (agent.Request.Summarize).
	Summarize bool `json:",omitempty"`
	// System is the run's system prompt (runner.Spec.System).
	System string `json:",omitempty"`
}

// modelOutput is a model turn, the summary asked for, or the model's
// invalid output; the raw output only when the run records it.
type modelOutput struct {
	agent.Turn
	Invalid *agent.InvalidOutputError
	// RequestTokens is the model's own estimate of the request (0 when
	// the model is no agent.ContextSizer).
	RequestTokens int `json:",omitempty"`
}

// toolInput is tool call Seq (0-based, in the run's order) of a run.
type toolInput struct {
	runEvents
	Seq  int
	Call gen.ToolCall
}

// runEvents is the run and the trace lines to write first: the input of
// the Check, Patch, Close and Events activities (Events: the events
// before a wait, so that they are visible while the run waits), and part
// of the Model and Tool activities'.
type runEvents struct {
	Run    runRef
	Events eventBatch
}

// carry gives an activity's input its run and the trace lines to write
// (wfRun.exec).
func (in *runEvents) carry(run runRef, b eventBatch) { in.Run, in.Events = run, b }

// Activities are the run workflow's activities, executed by workers.
// Register one value with both of a worker's task queues (see NewWorkers).
type Activities struct {
	// Store is the storage shared with the API servers.
	Store *Store
	// WorkspaceRoot holds the runs' workspaces.
	WorkspaceRoot string
	// HostQueue is the task queue of this host's workers, where a run's
	// tool activities go.
	HostQueue string
	// SystemModels builds a run's model from the system prompt its spec
	// carries (runner.Spec.System: the API server's --system-file) and
	// its configuration (the run's tools come with each request):
	// runner.ModelsWithSystem. It wins over Models.
	SystemModels func(system string) runner.ModelFactory
	// Models, without SystemModels, builds a run's model from its
	// configuration alone (script models); a run that carries a system
	// prompt then fails with model_error rather than go without it. Nil
	// with SystemModels nil means every run fails with model_error.
	Models func(cfg gen.ModelConfig) (agent.Model, error)
	// Setup is the host of every run (sandbox, commands, check timeout,
	// and in MCPServers the MCP servers runs may name: the worker's
	// --mcp): runner.Open sets it up per run with its workspace, check
	// and MCP servers.
	Setup wiring.Config
	// Clones clones the repositories isolated runs name by URL (the
	// worker's --clone-hosts and --clone-cache); nil refuses them.
	Clones *runner.Cloner

	mu      sync.Mutex
	runs    map[string]*openRun
	redOnce sync.Once
	red     *transcript.Redactor
}

// openRun is a run's setup on this worker, the workspace directory it
// works in (the setup does not own it) and, when the Open activity opened
// it, the run's task as runner.Open made it (its project docs, a
// follow-up's conversation).
type openRun struct {
	*wiring.Setup
	dir  *os.Root
	task gen.Task
}

func (o *openRun) Close() error { return errors.Join(o.Setup.Close(), o.dir.Close()) }

// setup returns run's open setup, opening it on first use (and after a
// worker restart): with the run's whole spec for the Open activity, which
// reads its project docs and rebuilds a follow-up's history (runner.Open),
// else with the part of it that its host needs.
func (a *Activities) setup(run runRef, whole *runner.Spec) (*openRun, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.runs[run.RunID]; s != nil {
		return s, nil
	}
	if run.Workspace != "" && !filepath.IsLocal(run.Workspace) {
		return nil, temporal.NewNonRetryableApplicationError("the workspace is not a path inside the workspace root", "workspace", nil)
	}
	custom, err := a.customTools(run.RunID, whole)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(a.WorkspaceRoot)
	if err != nil {
		return nil, fmt.Errorf("open the workspace root: %w", err)
	}
	ws := root
	if run.Workspace != "" {
		ws, err = root.OpenRoot(run.Workspace)
		root.Close()
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError("the workspace cannot be opened", "workspace", nil)
		}
	}
	sp := whole
	if sp == nil {
		sp = &runner.Spec{ID: run.RunID}
		sp.ProjectDocs = new(bool) // read once, by the Open activity
		if run.Check != "" {
			sp.Check = &run.Check
		}
		if len(run.MCPServers) > 0 {
			sp.McpServers = &run.MCPServers
		}
	}
	host := a.Setup
	host.Root, host.Tools = ws, append(host.Tools[:len(host.Tools):len(host.Tools)], custom...)
	host.TracePath, host.TraceWriter = "", nil
	s, err := runner.Open(context.Background(), sp, host)
	if err != nil {
		ws.Close()
		var re *runner.Error
		if errors.As(err, &re) {
			msg := re.Error() + " (give the workers the same --mcp as the API servers)"
			return nil, temporal.NewNonRetryableApplicationError(msg, "mcp", nil)
		}
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "setup", nil)
	}
	if s.Workspace != nil {
		// The patch's baseline is the run's, not this worker's.
		s.Workspace.KeepBaseline(baselineKeeper{a.Store, run.RunID})
	}
	o := &openRun{Setup: s, dir: ws, task: sp.Task}
	if a.runs == nil {
		a.runs = map[string]*openRun{}
	}
	a.runs[run.RunID] = o
	return o, nil
}

// write puts the trace lines and transcript entries an activity carries
// in the store, the entries redacted with the worker's secrets (its
// variables that hold them, its sandbox's PassEnv, Setup.Secrets).
func (a *Activities) write(id string, b eventBatch) error {
	if err := a.Store.appendEvents(id, b.From, b.Lines); err != nil {
		return storeError("write the trace", err)
	}
	a.redOnce.Do(func() { a.red = a.Setup.Redactor() })
	if err := a.Store.appendTranscript(id, b.EntriesFrom, b.Entries, a.red); err != nil {
		return storeError("write the transcript", err)
	}
	return nil
}

// begin writes the trace lines an activity carries and returns the run's
// setup.
func (a *Activities) begin(run runRef, b eventBatch) (*openRun, error) {
	if err := a.write(run.RunID, b); err != nil {
		return nil, err
	}
	return a.setup(run, nil)
}

// open opens the run's workspace on this host, runs the run's setup
// command there (after isolate made an isolated run's work tree) and
// returns the setup's result, the host's queue, the tools, the confinement of commands, the task with its project
// docs (unless the request turns them off), a follow-up's history and the
// model's context window. A model that cannot be built is the Model
// activity's error to report.
func (a *Activities) open(ctx context.Context, in runInput) (openOutput, error) {
	if err := a.refuseCommands(&in.Spec); err != nil {
		return openOutput{}, err
	}
	ref := refOf(&in.Spec)
	if err := a.isolate(ctx, ref); err != nil {
		return openOutput{}, err
	}
	sp := in.Spec
	if err := a.turns(sp.System, sp.Conversation); err != nil {
		return openOutput{}, temporal.NewNonRetryableApplicationError("rebuild the conversation's history: "+err.Error(), "conversation", nil)
	}
	s, err := a.setup(ref, &sp)
	if err != nil {
		return openOutput{}, err
	}
	out := openOutput{HostQueue: a.HostQueue, Tools: []gen.ToolSpec{}, Task: s.task, ProjectDocs: s.Options.ProjectDocs}
	if sp.Setup != nil {
		if out.Setup, err = a.runSetup(ctx, &sp, s); err != nil {
			return openOutput{}, err
		}
	}
	if f := s.Options.FollowUp; f != nil {
		out.History = f.History
	}
	if s.Options.Tools != nil {
		out.Tools = s.Options.Tools.Specs()
		if sb, ok := s.Options.Tools.(agent.Sandboxed); ok {
			out.ToolsSandbox = sb.SandboxInfo()
		}
	}
	if sb, ok := s.Options.Check.(agent.Sandboxed); ok {
		out.CheckSandbox = sb.SandboxInfo()
	}
	if a.hasModels() {
		if m, err := a.modelFor(in.System, in.Model); err == nil {
			if cs, ok := m.(agent.ContextSizer); ok {
				req := &agent.Request{Task: out.Task, Tools: out.Tools}
				out.ContextWindow = cs.ContextWindow()
				out.RequestOverhead = cs.RequestTokens(req) - requestTokens(req.Task, agent.History{})
			}
		}
	}
	return out, nil
}

// runSetup runs the run's setup command once: its result is recorded in
// the store before the activity returns it, and an attempt of the Open
// activity after one that ran it (a worker crash, a timeout) returns the
// record instead of running the command again.
func (a *Activities) runSetup(ctx context.Context, sp *runner.Spec, s *openRun) (*gen.CheckResult, error) {
	if data, ok, err := a.Store.recordedSetup(sp.ID); err != nil {
		return nil, storeError("read the setup's record", err)
	} else if ok {
		var res gen.CheckResult
		if err := json.Unmarshal(data, &res); err != nil {
			return nil, temporal.NewNonRetryableApplicationError("the setup's record: "+err.Error(), "setup", nil)
		}
		return &res, nil
	}
	stop := heartbeat(ctx)
	res, err := runner.RunSetup(ctx, sp, s.Setup, a.Setup)
	stop()
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "setup", nil)
	}
	data, err := json.Marshal(res)
	if err == nil {
		err = a.Store.recordSetup(sp.ID, data)
	}
	if err != nil {
		return nil, storeError("record the setup", err)
	}
	return res, nil
}

// turns gives a follow-up's runs (its spec's Conversation) what the spec
// does not carry for runner.Open to rebuild its history: each run's
// transcript in the store and its model, built with system, the prompt of
// the run that continues them (as the API server builds them: its own).
func (a *Activities) turns(system string, turns []runner.Turn) error {
	for i := range turns {
		t := &turns[i]
		var err error
		if t.Transcript, err = a.Store.TranscriptPath(t.Spec.ID); err != nil {
			return err
		}
		if a.hasModels() {
			// Asked nothing: its context window budgets the replay.
			if t.Model, err = a.modelFor(system, t.Spec.Model); err != nil {
				return fmt.Errorf("run %s's model: %w", t.Spec.ID, err)
			}
		}
	}
	return nil
}

// model asks the run's model for its next turn.
func (a *Activities) model(ctx context.Context, in modelInput) (modelOutput, error) {
	if err := a.write(in.Run.RunID, in.Events); err != nil {
		return modelOutput{}, err
	}
	if !a.hasModels() {
		return modelOutput{}, temporal.NewNonRetryableApplicationError("this worker has no models", "model", nil)
	}
	m, err := a.modelFor(in.System, in.Model)
	if err != nil {
		return modelOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "model", nil)
	}
	// A script model is stateful (its position in the responses): it is
	// moved past the responses the run's earlier calls took.
	if s, ok := m.(*model.Script); ok {
		s.Skip(in.Calls)
	}
	defer heartbeat(ctx)()
	req := &agent.Request{Task: in.Task, History: agent.NewHistory(in.History...), Tools: in.Tools, Summarize: in.Summarize}
	out := modelOutput{}
	if cs, ok := m.(agent.ContextSizer); ok {
		out.RequestTokens = cs.RequestTokens(req)
	}
	out.Turn, err = m.Next(ctx, req)
	if errors.As(err, &out.Invalid) {
		inv := *out.Invalid
		out.Turn, out.Invalid = agent.Turn{}, &inv
		if !in.RecordRaw {
			inv.Raw = ""
		}
		return out, nil
	}
	if err != nil {
		return modelOutput{}, modelError(err)
	}
	for i := range out.Actions {
		out.Actions[i].Usage = nil // the turn's counts
		if !in.RecordRaw {
			out.Actions[i].Raw = ""
		}
	}
	return out, nil
}

// modelErrorType is the ApplicationError type of a model call's error.
const modelErrorType = "model"

// modelFailure is what the workflow needs of a model call's error to give
// the loop the error the in-process engine gives it: its text (the
// ApplicationError's message), the *model.ProviderError in it, and
// whether it wraps agent.ErrContextLength, with the window the provider
// named (agent.ContextLengthError).
type modelFailure struct {
	// Provider is the error's *model.ProviderError without its Err (the
	// SDK's error); ErrText is that error's text only for a failure
	// without a response, whose own text has it: a provider's message is
	// never kept.
	Provider      *model.ProviderError `json:",omitempty"`
	ErrText       string               `json:",omitempty"`
	ContextLength bool                 `json:",omitempty"`
	ContextWindow int                  `json:",omitempty"`
}

// modelError is the Model activity's error for err: an ApplicationError
// of type modelErrorType with a modelFailure as its details, retried only
// for a transport error or the provider's rate limit or overload.
func modelError(err error) error {
	var f modelFailure
	var pe *model.ProviderError
	retry := false
	if errors.As(err, &pe) {
		p := *pe
		p.Err, f.Provider = nil, &p
		if pe.StatusCode == 0 && pe.Timeout == 0 && pe.Err != nil {
			f.ErrText = pe.Err.Error()
		}
		retry = pe.StatusCode == 0 || pe.StatusCode == 429 || pe.StatusCode >= 500
	}
	f.ContextLength = errors.Is(err, agent.ErrContextLength)
	if cl := (*agent.ContextLengthError)(nil); errors.As(err, &cl) {
		f.ContextWindow = cl.Window
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), modelErrorType, temporal.ApplicationErrorOptions{NonRetryable: !retry, Details: []any{f}})
}

// remoteError is a model error rebuilt in the workflow: the activity's
// text, wrapping what the loop and the caller branch on.
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

// rebuild returns the error a modelFailure describes, with text msg.
func (f *modelFailure) rebuild(msg string) error {
	e := &remoteError{msg: msg}
	if pe := f.Provider; pe != nil {
		if f.ErrText != "" {
			pe.Err = errors.New(f.ErrText)
		}
		e.errs = append(e.errs, pe)
	}
	if f.ContextLength {
		e.errs = append(e.errs, &agent.ContextLengthError{Window: f.ContextWindow, Err: errors.New(msg)})
	}
	return e
}

// requestTokens is the workflow's estimate of a request's task and
// history, in tokens: their bytes in the spec's wire form at three bytes a
// token, as the adapters count. The model's own estimate adds its
// overhead (openOutput.RequestOverhead).
func requestTokens(task gen.Task, h agent.History) int {
	n := len(task.Prompt)
	if task.Instructions != nil {
		n += len(*task.Instructions)
	}
	for _, it := range h.All() {
		if w, err := it.Wire(); err == nil {
			b, _ := w.MarshalJSON()
			n += len(b)
		}
	}
	return (n + 2) / 3
}

// tool executes tool call in.Seq of the run once: a retried attempt (the
// first one's worker died after the call) returns the recorded
// observation.
func (a *Activities) tool(ctx context.Context, in toolInput) (gen.Observation, error) {
	if err := a.write(in.Run.RunID, in.Events); err != nil {
		return gen.Observation{}, err
	}
	if obs, ok, err := a.Store.recordedCall(in.Run.RunID, in.Seq); err != nil || ok {
		if err != nil {
			return obs, storeError("read the record of the tool call", err)
		}
		return obs, nil
	}
	s, err := a.setup(in.Run, nil)
	if err != nil {
		return gen.Observation{}, err
	}
	if s.Options.Tools == nil {
		return gen.Observation{}, temporal.NewNonRetryableApplicationError("the run has no tools", "tools", nil)
	}
	defer heartbeat(ctx)()
	obs, err := s.Options.Tools.Call(ctx, &in.Call)
	if errors.Is(err, tools.ErrBaseline) {
		// The store failed (the call changed nothing): retried.
		return gen.Observation{}, fmt.Errorf("tool call %d: %w", in.Seq, err)
	}
	if err != nil {
		return gen.Observation{}, temporal.NewNonRetryableApplicationError(err.Error(), "tool", nil)
	}
	if err := a.Store.recordCall(in.Run.RunID, in.Seq, &obs); err != nil {
		return gen.Observation{}, storeError(fmt.Sprintf("record tool call %d", in.Seq), err)
	}
	return obs, nil
}

// check runs the run's completion check.
func (a *Activities) check(ctx context.Context, in runEvents) (gen.CheckResult, error) {
	s, err := a.begin(in.Run, in.Events)
	if err != nil {
		return gen.CheckResult{}, err
	}
	if s.Options.Check == nil {
		return gen.CheckResult{}, temporal.NewNonRetryableApplicationError("the run has no check", "check", nil)
	}
	if err := a.refuseCommand("the completion check was refused"); err != nil {
		return gen.CheckResult{}, err
	}
	defer heartbeat(ctx)()
	res, err := s.Options.Check.Check(ctx)
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), "check", nil)
	}
	return res, nil
}

// patch returns the changes the run made to its workspace.
func (a *Activities) patch(ctx context.Context, in runEvents) (string, error) {
	s, err := a.begin(in.Run, in.Events)
	if err != nil {
		return "", err
	}
	p, ok := s.Options.Tools.(agent.Patcher)
	if !ok {
		return "", nil
	}
	patch, err := p.Patch(ctx)
	if err != nil {
		return "", temporal.NewNonRetryableApplicationError(err.Error(), "patch", nil)
	}
	return patch, nil
}

// events writes trace lines of a run.
func (a *Activities) events(ctx context.Context, in runEvents) error {
	return a.write(in.Run.RunID, in.Events)
}

// close writes the end of the run's trace and releases its workspace;
// an isolated run's work tree is removed.
func (a *Activities) close(ctx context.Context, in runEvents) error {
	if err := a.write(in.Run.RunID, in.Events); err != nil {
		return err
	}
	a.mu.Lock()
	s := a.runs[in.Run.RunID]
	delete(a.runs, in.Run.RunID)
	a.mu.Unlock()
	var err error
	if s != nil {
		err = s.Close()
	}
	if in.Run.From != "" && filepath.IsLocal(in.Run.Workspace) {
		if root, rerr := os.OpenRoot(a.WorkspaceRoot); rerr == nil {
			err = errors.Join(err, root.RemoveAll(in.Run.Workspace))
			root.Close()
		}
	}
	return err
}

// isolate makes an isolated run's work tree on this worker's root before
// the run is first opened here (runner.MakeWorkTree); the Open activity
// calls it, before any tool can have changed the work tree, so a retried
// Open makes it afresh.
func (a *Activities) isolate(ctx context.Context, run runRef) error {
	if run.From == "" {
		return nil
	}
	a.mu.Lock()
	open := a.runs[run.RunID] != nil
	a.mu.Unlock()
	if open || !filepath.IsLocal(run.Workspace) || run.From != "." && !filepath.IsLocal(run.From) {
		return nil
	}
	err := runner.MakeWorkTree(ctx, a.WorkspaceRoot, a.Clones, runner.WorkTreeSource{Workspace: run.From, RepoURL: run.RepoURL, Commit: run.Commit}, run.Workspace)
	var re *runner.Error
	if errors.As(err, &re) {
		return temporal.NewNonRetryableApplicationError(re.Error(), "isolation", nil)
	}
	if err != nil {
		return fmt.Errorf("make the run's work tree: %w", err)
	}
	return nil
}

// heartbeat reports the activity alive until the returned func is called,
// so that a worker that dies mid-call is noticed within the heartbeat
// timeout.
func heartbeat(ctx context.Context) (stop func()) {
	every := time.Second
	if t := activity.GetInfo(ctx).HeartbeatTimeout; t > 0 {
		every = max(t/4, 10*time.Millisecond)
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// storeError is the error of an activity whose store access failed: one
// that no retry can mend (a run id not of the spec's shape) is not
// retried.
func storeError(what string, err error) error {
	if errors.Is(err, ErrInvalidRunID) {
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), "run_id", err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
