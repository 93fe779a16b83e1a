package temporal

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/transcript"
)

// WorkflowName is the name the run workflow is registered under.
const WorkflowName = "specloop.Run"

// runInput is a run as the workflow receives it: the run's spec as the
// runner accepted it (its Model is built by the worker's Models; its
// Workspace is relative to the workers' workspace root) and how to run it.
type runInput struct {
	runner.Spec
	// HeartbeatTimeout is how long a worker may go silent during a tool
	// call or check before the call moves to another worker of the host;
	// 0 means DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// ContinueAsNewSteps is how many steps one workflow execution takes
	// before it continues as new (0: defaultContinueAsNewSteps), so that
	// a long run's workflow history stays short.
	ContinueAsNewSteps int `json:",omitempty"`
	// Continued is set in the input of a continued execution.
	Continued *continued `json:",omitempty"`
}

// DefaultHeartbeatTimeout is Engine.HeartbeatTimeout's default: how long
// a worker may go silent in a tool call or check before the call moves to
// another worker of its host.
const DefaultHeartbeatTimeout = 20 * time.Second

// defaultContinueAsNewSteps is runInput.ContinueAsNewSteps's default.
const defaultContinueAsNewSteps = 500

// continued is what a run's execution hands the next one when it continues
// as new: the loop's paused state (its history goes by reference through
// the store when it is large, as every large payload does), the run's
// setup on its host, and the counters that number its activities and
// trace lines.
type continued struct {
	State agent.State
	progress
}

// progress is a run's setup on its host and the counters that number its
// activities, trace lines and transcript entries.
type progress struct {
	Opened     openOutput
	ModelCalls int // model calls made
	ToolCalls  int // tool calls made
	Written    int // trace lines in the store
	// Transcribed is the transcript entries in the store.
	Transcribed int `json:",omitempty"`
}

// The names of the activities: Activities' methods, registered with the
// prefix activityPrefix (Register does it).
const (
	activityPrefix = "specloop."
	openActivity   = activityPrefix + "Open"
	modelActivity  = activityPrefix + "Model"
	toolActivity   = activityPrefix + "Tool"
	checkActivity  = activityPrefix + "Check"
	patchActivity  = activityPrefix + "Patch"
	closeActivity  = activityPrefix + "Close"
	eventsActivity = activityPrefix + "Events"
)

// runWorkflow runs one run: agent.Run with the model, the tools, the check
// and the trace behind activities. Its result is the run's RunResult, also
// for runs that failed (exit reason internal_error or model_error); a
// workflow error means the workflow itself could not run.
func runWorkflow(wctx workflow.Context, in runInput) (res gen.RunResult, err error) {
	r := &wfRun{wctx: wctx, in: in}
	r.indexed = indexed(wctx)
	defer func() {
		if err == nil { // a result: the run ended (not continued as new)
			r.ended(&res)
		}
	}()
	if err := workflow.SetQueryHandler(wctx, pendingQuery, func() (*runner.EnginePendingCall, error) { return r.waiting, nil }); err != nil {
		return gen.RunResult{}, fmt.Errorf("register the pending-call query: %w", err)
	}
	if err := workflow.SetUpdateHandler(wctx, eventsUpdate, r.eventsAfter); err != nil {
		return gen.RunResult{}, fmt.Errorf("register the events update: %w", err)
	}
	// However the execution ends (cancelled too), its followers' updates
	// return first.
	defer func() {
		dctx, _ := workflow.NewDisconnectedContext(wctx)
		r.end(dctx)
	}()

	hb := in.HeartbeatTimeout
	if hb <= 0 {
		hb = DefaultHeartbeatTimeout
	}
	r.shared = workflow.WithActivityOptions(wctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    hb,
		// Model calls are retried on transport and rate-limit errors only
		// (the activity marks every other error non-retryable), a few
		// times: the adapters already retry within a call.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	if c := in.Continued; c != nil {
		r.progress = c.progress
	} else if err := workflow.ExecuteActivity(openContext(r.shared, &in), openActivity, in).Get(wctx, &r.Opened); err != nil {
		if msg := refusal(err); msg != "" {
			return r.commandsRefused(msg)
		}
		msg := agent.ClipMessage("open the run: " + activityMessage(err))
		return gen.RunResult{RunId: &in.ID, ExitReason: gen.ExitReasonInternalError, Error: &msg}, nil
	}
	opened := r.Opened
	r.host = workflow.WithActivityOptions(wctx, workflow.ActivityOptions{
		TaskQueue:           opened.HostQueue,
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    hb,
		// Tool calls are idempotent by their sequence number (the Tool
		// activity returns a recorded observation), so a call that a
		// worker crash interrupted is simply retried.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 10},
	})
	if opened.Setup != nil && !opened.Setup.Passed {
		return r.setupFailed(*opened.Setup)
	}
	// The spec's options, as a local run gets them, with the tools, the
	// check, the trace and the approvals behind activities.
	opts := in.Options()
	opts.Tools, opts.Trace = (*wfTools)(r), r
	// The task with its project docs, as the Open activity read them (a
	// workflow opened before it read them has none).
	task := in.Task
	if opened.Task.Prompt != "" {
		task, opts.ProjectDocs = opened.Task, opened.ProjectDocs
	}
	// A follow-up goes on from the conversation's history, which the Open
	// activity rebuilt.
	if f := in.FollowUp; f != nil && f.History == nil {
		opts.FollowUp = &agent.FollowUp{History: opened.History, Message: f.Message}
	}
	opts.Clock = func() time.Time { return workflow.Now(wctx) }
	opts.PauseAfter = in.ContinueAsNewSteps
	if opts.PauseAfter <= 0 {
		opts.PauseAfter = defaultContinueAsNewSteps
	}
	if in.Continued != nil {
		opts.Resume = &in.Continued.State
	}
	if in.KeepsTranscript() {
		// The entries go to the store with the trace lines, redacted there
		// by the worker.
		opts.Observer = transcript.NewRecorder((*wfTranscript)(r), in.Asked()).Observe
	}
	if in.CheckCommand() != "" {
		opts.Check = (*wfCheck)(r)
	}
	if opts.ApprovalPolicy != "" {
		opts.Approver = (*wfApprover)(r)
	}
	res, runErr := agent.Run(wfContext{wctx}, task, (*wfModel)(r), opts)
	res.Setup = opened.Setup
	// Otherwise the result says it: internal_error or model_error with the
	// error's text.
	var paused *agent.PausedError
	if errors.As(runErr, &paused) {
		return r.continueAsNew(paused.State)
	}
	// The rest of the trace and the release of the workspace happen even
	// when the run was cancelled.
	dctx, _ := workflow.NewDisconnectedContext(r.host)
	if err := r.exec(dctx, closeActivity, &runEvents{}, nil); err != nil {
		return res, fmt.Errorf("write the end of the trace: %w", err)
	}
	return res, nil
}

// eventsUpdate is the workflow update an API server follows a run's trace
// by, instead of polling the store: given the lines it has, it returns how
// many are in the store once there are more, or when this execution ends
// (then as many as there are; a continued run goes on in the next).
const eventsUpdate = "specloop.events"

// eventsAfter is eventsUpdate's handler.
func (r *wfRun) eventsAfter(ctx workflow.Context, have int) (int, error) {
	err := workflow.Await(ctx, func() bool { return r.Written > have || r.ending })
	return r.Written, err
}

// end lets the followers' updates return, and waits for them: an
// execution that ends with an update open would fail its caller.
func (r *wfRun) end(ctx workflow.Context) {
	r.ending = true
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}

// setupFailed ends the run whose setup failed with res: its trace ends
// with run_finished, and its workspace is released, without a model call.
func (r *wfRun) setupFailed(setup gen.CheckResult) (gen.RunResult, error) {
	return r.endBeforeTheModel(runner.SetupFailed(r.in.ID, setup), r.host, closeActivity)
}

// endBeforeTheModel ends the run with res before its first model call:
// its trace ends with run_finished, written by activity fn on ctx.
func (r *wfRun) endBeforeTheModel(res gen.RunResult, ctx workflow.Context, fn string) (gen.RunResult, error) {
	if err := r.Emit(&gen.TraceEvent{RunId: r.in.ID, EventType: gen.TraceEventTypeRunFinished, Time: workflow.Now(r.wctx).UTC(),
		ExitReason: &res.ExitReason, StepsUsed: new(0), Error: res.Error}); err != nil {
		return res, err
	}
	if err := r.exec(ctx, fn, &runEvents{}, nil); err != nil {
		return res, fmt.Errorf("write the end of the trace: %w", err)
	}
	return res, nil
}

// openContext is the Open activity's context: a run with a setup command
// gives it the setup's own timeout (the check's) on top of the usual ten
// minutes, so that the command's timeout, not the activity's, ends a
// setup that hangs.
func openContext(shared workflow.Context, in *runInput) workflow.Context {
	if in.Setup == nil {
		return shared
	}
	return workflow.WithStartToCloseTimeout(shared, 10*time.Minute+tools.DefaultCheckTimeout)
}

// continueAsNew writes the trace lines still queued and continues the run
// as a new execution from st.
func (r *wfRun) continueAsNew(st agent.State) (gen.RunResult, error) {
	if err := r.exec(r.shared, eventsActivity, &runEvents{}, nil); err != nil {
		return gen.RunResult{}, fmt.Errorf("write the trace before continuing as new: %w", err)
	}
	next := r.in
	next.Continued = &continued{State: st, progress: r.progress}
	return gen.RunResult{}, workflow.NewContinueAsNewError(r.wctx, WorkflowName, next)
}

// wfRun is a run's state inside the workflow; its methods are the
// activity-backed implementations of the loop's interfaces.
type wfRun struct {
	wctx         workflow.Context
	in           runInput
	shared, host workflow.Context
	progress
	pending [][]byte                  // trace lines not yet in the store
	waiting *runner.EnginePendingCall // the call waiting for approval (PendingQuery)
	entries []gen.TranscriptEntry     // transcript entries not yet in the store
	ending  bool                      // the execution's trace is all in the store (eventsUpdate)
	indexed bool                      // the workflow keeps its search attributes current (index.go)
}

// refOf is run sp's runRef.
func refOf(sp *runner.Spec) runRef {
	ref := runRef{RunID: sp.ID, Check: sp.CheckCommand(), MCPServers: sp.MCPNames()}
	if sp.Workspace != nil {
		ref.Workspace = *sp.Workspace
	}
	if sp.Isolated() {
		ref.From, ref.Workspace = cmp.Or(ref.Workspace, "."), path.Join(runner.IsolatedDir, sp.ID) // "." for the root: From is set
		if sp.Commit != nil {
			ref.Commit = *sp.Commit
		}
		if sp.RepoUrl != nil {
			ref.RepoURL = *sp.RepoUrl
		}
	}
	return ref
}

// Emit queues a trace event; the next activity appends the queue to the
// store before it does its work.
func (r *wfRun) Emit(ev *gen.TraceEvent) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as trace.Writer encodes
	if err := enc.Encode(ev); err != nil {
		return fmt.Errorf("encode a trace event: %w", err)
	}
	r.pending = append(r.pending, bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return nil
}

// wfTranscript queues the run's transcript entries (a transcript.Sink).
type wfTranscript wfRun

func (t *wfTranscript) Write(e gen.TranscriptEntry) error {
	t.entries = append(t.entries, e)
	return nil
}

// exec runs activity fn with input in, which it gives the run and the
// queued trace lines and transcript entries, and decodes its result into
// out; once it succeeded, they are in the store. After a failure they
// stay queued for the next activity (the store skips those an earlier
// attempt wrote).
func (r *wfRun) exec(ctx workflow.Context, fn string, in interface{ carry(runRef, eventBatch) }, out any) error {
	b := eventBatch{From: r.Written, Lines: r.pending, EntriesFrom: r.Transcribed, Entries: r.entries}
	in.carry(refOf(&r.in.Spec), b)
	if err := workflow.ExecuteActivity(ctx, fn, in).Get(ctx, out); err != nil {
		return err
	}
	r.Written = b.From + len(b.Lines)
	r.pending = r.pending[len(b.Lines):]
	r.Transcribed = b.EntriesFrom + len(b.Entries)
	r.entries = r.entries[len(b.Entries):]
	return nil
}

// wfModel is the run's model: each turn (and each summary) is a Model
// activity. It is an agent.ContextSizer when the worker's model is one:
// the window comes from the Open activity, and a request's estimate is the
// workflow's own (requestTokens, deterministic) plus the model's overhead,
// which each reply's estimate of the request it answered corrects. A
// model error comes back as the in-process engine has it: the same text,
// wrapping the *model.ProviderError and agent.ErrContextLength.
type wfModel wfRun

var (
	_ agent.Model        = (*wfModel)(nil)
	_ agent.ContextSizer = (*wfModel)(nil)
)

func (m *wfModel) ContextWindow() int { return m.Opened.ContextWindow }

func (m *wfModel) RequestTokens(req *agent.Request) int {
	return m.Opened.RequestOverhead + requestTokens(req.Task, req.History)
}

func (m *wfModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	r := (*wfRun)(m)
	in := &modelInput{Task: req.Task, Model: r.in.Model, System: r.in.System, Tools: req.Tools, Calls: r.ModelCalls,
		History: req.History.Items(), RecordRaw: r.in.RecordRaw, Summarize: req.Summarize}
	r.ModelCalls++
	var out modelOutput
	if err := r.exec(r.shared, modelActivity, in, &out); err != nil {
		return agent.Turn{}, modelCallError(err)
	}
	if out.RequestTokens > 0 && !req.Summarize {
		r.Opened.RequestOverhead = out.RequestTokens - requestTokens(req.Task, req.History)
	}
	switch {
	case req.Summarize:
		return agent.Turn{Summary: out.Summary, Usage: out.Usage}, nil
	case out.Invalid != nil:
		return agent.Turn{}, out.Invalid
	}
	return out.Turn, nil
}

// wfTools is the run's tool runtime: each call is a Tool activity on the
// run's host queue, numbered in the order the loop makes them.
type wfTools wfRun

func (t *wfTools) Specs() []gen.ToolSpec { return t.Opened.Tools }

func (t *wfTools) Call(_ context.Context, call *gen.ToolCall) (gen.Observation, error) {
	r := (*wfRun)(t)
	in := &toolInput{Seq: r.ToolCalls, Call: *call}
	r.ToolCalls++
	var obs gen.Observation
	if err := r.exec(r.host, toolActivity, in, &obs); err != nil {
		return gen.Observation{}, activityError(err)
	}
	return obs, nil
}

// Patch is the run's diff, read even after a cancellation.
func (t *wfTools) Patch(context.Context) (string, error) {
	r := (*wfRun)(t)
	dctx, _ := workflow.NewDisconnectedContext(r.host)
	var patch string
	if err := r.exec(dctx, patchActivity, &runEvents{}, &patch); err != nil {
		return "", activityError(err)
	}
	return patch, nil
}

func (t *wfTools) SandboxInfo() *gen.SandboxInfo { return t.Opened.ToolsSandbox }

// wfCheck is the run's completion check: a Check activity on the host.
type wfCheck wfRun

func (c *wfCheck) Check(context.Context) (gen.CheckResult, error) {
	r := (*wfRun)(c)
	var res gen.CheckResult
	if err := r.exec(r.host, checkActivity, &runEvents{}, &res); err != nil {
		return gen.CheckResult{}, activityError(err)
	}
	return res, nil
}

func (c *wfCheck) SandboxInfo() *gen.SandboxInfo { return c.Opened.CheckSandbox }

// modelCallError is the error the loop gets for a failed Model activity:
// the model's error rebuilt from the activity's (modelFailure), else
// activityError's.
func modelCallError(err error) error {
	var app *temporal.ApplicationError
	var f modelFailure
	if errors.As(err, &app) && app.Type() == modelErrorType && app.HasDetails() && app.Details(&f) == nil {
		return f.rebuild(app.Message())
	}
	return activityError(err)
}

// activityError is the error the loop gets for a failed activity: the
// activity's own message, as the in-process engine would have it, or the
// cancellation.
func activityError(err error) error {
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return context.Canceled
	}
	return errors.New(activityMessage(err))
}

func activityMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// wfContext is the context agent.Run gets inside the workflow: it is
// cancelled when the workflow is, as the workflow sees it (deterministic).
// Done returns nil: nothing the loop calls inside the workflow waits on it
// (the activity-backed implementations wait on workflow futures, which
// the workflow's cancellation ends), and a channel closed by a goroutine
// would not be deterministic.
type wfContext struct{ w workflow.Context }

func (c wfContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c wfContext) Done() <-chan struct{}       { return nil }
func (c wfContext) Value(key any) any           { return c.w.Value(key) }

func (c wfContext) Err() error {
	if c.w.Err() != nil {
		return context.Canceled
	}
	return nil
}
