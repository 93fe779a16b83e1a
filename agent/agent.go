// Package agent is specloop's loop: a Model proposes a turn of actions (one,
// or several parallel tool calls), the runtime (not the model) decides what
// runs, and every run ends with a structured RunResult and an append-only
// trace.
//
// A step is one model call, whatever the number of actions in its turn.
// The turn's actions run in order: each tool call is executed and its
// Observation, tied to the call's id, appended to the history; output that
// is not a valid turn becomes ModelFeedback and costs a step; a Finish (only
// ever a turn's last action) ends the run, or, with a completion check,
// becomes a request that the check must confirm.
//
// Long runs stay bounded. The model sees each tool output capped (10 KiB
// and 256 lines by default, less in a small context window; head and tail
// around a marker; see TruncateOutput) while an Observer gets it whole.
// For a Model that is a ContextSizer (a Model's one optional ability), the
// history is compacted before a request would pass the threshold of its
// context window, and a request over the window is never sent; a Model
// error wrapping ErrContextLength gets one compaction and a retry, and
// when it names the window (ContextLengthError) the run keeps to that
// window from then on (see Compaction). A model that repeats the same
// calls with the same results is warned once and then stopped, exit reason
// stuck (see StuckDetection).
//
// # Approvals
//
// A run's approval policy (Options.ApprovalPolicy, the spec's
// ApprovalPolicy) says which tool calls wait for a person's decision before
// they run; the Approver (Options.Approver) asks the person. Which tools
// run commands or write to the workspace is what the run's tool runtime
// says in their specs (gen.ToolSpec's runs_commands and writes_files,
// from the spec's tool operations: x-specloop-command, x-specloop-writes),
// so a new tool declares it there. A tool the spec does not declare — a
// custom tool (its handler may be a command or an endpoint), an MCP
// server's tool — may do anything, and its runtime says it runs commands.
//
// What each policy asks about:
//
//   - never (or none given): no call. Every tool the run offers runs as
//     the model calls it.
//   - commands: every call of run_command, of a custom tool and of an MCP
//     server's tool. Not the file tools: write_file, edit_file and
//     apply_patch write without asking, and reads (read_file, list_files,
//     search) and the calculator run without asking.
//   - writes: those, and every call of write_file, edit_file and
//     apply_patch. Reads and the calculator run without asking.
//   - always: every call of every tool, reads included.
//
// Under no policy is the completion check (Options.Check) asked about. It
// is the person's own command, given with the run, and it runs, sandboxed
// like run_command, each time the model finishes — and what it runs is the
// workspace as the model left it: the tests, build files and scripts the
// model wrote or changed. That is its purpose (it judges the model's
// work), and no policy stops it; a person who must not run code the model
// wrote, even sandboxed, gives no check.
//
// Only calls of tools the run offers are asked about: a call of any other
// name goes to the runtime, which answers unknown_tool. The loop runs a
// turn's actions in order, so two calls of one turn that need approval are
// asked one after the other, the second once the first was decided (and,
// if approved, ran).
//
// An approval runs the call; a denial does not run the call and answers
// it with an error Observation of code denied carrying the reason, and the
// run goes on. approve_for_run also lets every later call of the same tool
// in the run through without asking (per tool, not the whole run), with
// one limit: for a tool that runs commands (run_command, custom and MCP
// tools) it holds only while the run changes no file. Once a call of
// write_file, edit_file or apply_patch ran after the decision (approved or,
// under commands, not asked about; failed or not), the tool's next call is
// asked about again, and its ApprovalRequest.Reason says that files
// changed since the tool was last approved — a person who let `sh
// build.sh` run did not see the build.sh the model wrote after. The same
// Reason comes with any later request of a command tool approved once
// before in the run. Changes a command makes itself do not lapse an
// approval: a tool approved for the run may already run any command, and
// the loop does not see what a command, a custom tool or an MCP tool
// wrote. An approve_for_run of a tool that does not run commands
// (write_file under writes, read_file under always) holds for the run.
//
// Each request is traced as approval_requested (tool name, call id and
// argument keys, never argument values) and each decision as
// approval_decided (the decision and the summary of the reason).
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/trace"
)

// DefaultMaxSteps is the step budget when Options.MaxSteps is 0: the
// default the spec gives CreateRunRequest.max_steps.
const DefaultMaxSteps = gen.DefaultCreateRunRequestMaxSteps

// ToolRuntime executes tool calls; *tools.Runtime is the implementation.
// Call returns an error only when the runtime itself failed; every expected
// failure is an Observation with IsError set.
type ToolRuntime interface {
	Specs() []gen.ToolSpec
	Call(ctx context.Context, call *gen.ToolCall) (gen.Observation, error)
}

// Patcher is an optional ability of a ToolRuntime: the changes the run made
// to its workspace, as a unified diff.
type Patcher interface {
	Patch(ctx context.Context) (string, error)
}

// Sandboxed is an optional ability of a ToolRuntime or a Checker: how the
// commands it runs are confined (nil when it runs none). The run records it
// in run_started and the RunResult.
type Sandboxed interface {
	SandboxInfo() *gen.SandboxInfo
}

// Checker is a completion gate: it runs when the model finishes, and the run
// ends finished only when the check passes. An error means the check could
// not be run at all (an internal error), not that it failed.
type Checker interface {
	Check(ctx context.Context) (gen.CheckResult, error)
}

// Tracer receives the run's trace events in order; *trace.Writer is the
// usual implementation. An Emit error ends the run with internal_error.
// Every event is new and Emit may keep it.
type Tracer interface {
	Emit(ev *gen.TraceEvent) error
}

// Options configure Run. The zero value is a five-step run with no tools, no
// check and no trace.
type Options struct {
	// MaxSteps is the step budget; 0 means DefaultMaxSteps.
	MaxSteps int
	// TokenBudget ends the run with token_budget_exceeded once the model
	// calls reported more tokens than this; 0 means no limit.
	TokenBudget int64
	// RunID names the run in its trace and result; empty means a random id.
	RunID string
	// Tools executes tool calls; nil means no tool is available.
	Tools ToolRuntime
	// Check, when set, must pass before a Finish ends the run. It runs
	// each time the model finishes, under every approval policy without
	// asking, and runs what the workspace then holds: code the model wrote
	// included (see Approvals in approval.go).
	Check Checker
	// ApprovalPolicy says which tool calls wait for Approver's decision
	// before they run (see approval.go); "" means never.
	ApprovalPolicy gen.ApprovalPolicy
	// Approver asks a person; required by every policy but never.
	Approver Approver
	// Trace receives every event; nil records nothing.
	Trace Tracer
	// RecordRaw adds the model's raw output to model_action and
	// model_feedback events (for replay). Off by default: it breaks the
	// trace's privacy guarantee.
	RecordRaw bool
	// ProjectDocs are the project docs files the task's instructions were
	// read from (runner.ProjectDocs), recorded in run_started.
	ProjectDocs []gen.ProjectDoc
	// Observer, when set, is called after each event was traced, for
	// progress display. It must not block for long.
	Observer func(p Progress)
	// Live, when set, is told what no trace event says while a step runs:
	// that its model call started, each piece of the model's text as the
	// model streams it (Request.OnText), and that a tool call starts to
	// run (approved, or not asked about). It is called from the loop's
	// goroutine or the model's; it must not block for long.
	Live func(Live)
	// Clock is the loop's source of event times and durations; nil means
	// time.Now. A durable engine replaying the loop sets a deterministic one.
	Clock func() time.Time
	// MaxObservationBytes and MaxObservationLines cap each tool output as
	// the model sees it (see TruncateOutput): 0 means
	// DefaultMaxObservationBytes and DefaultMaxObservationLines; a
	// small context window lowers the byte cap to fit (see Compaction).
	// The Observer still gets the whole Observation.
	MaxObservationBytes int
	MaxObservationLines int
	// Compaction keeps the requests within the model's context window.
	Compaction Compaction
	// Stuck detects a model that repeats itself.
	Stuck StuckDetection
	// PauseAfter, when positive, makes Run return after that many steps
	// of this call with a *PausedError (see resume.go); Resume, when set,
	// goes on from a paused run's State instead of starting.
	PauseAfter int
	Resume     *State
	// Ended, when set, is called once with the run's State when it ends
	// (not when it pauses): the history with its last turn, for a
	// follow-up that continues the conversation.
	Ended func(State)
	// FollowUp, when set, makes the run the next turn of a conversation:
	// it starts from the history a run ended with and a person's message
	// (see followup.go). A text-only reply then ends the turn.
	FollowUp *FollowUp
}

// Run runs task with model until it finishes, the budget is spent, the
// context is cancelled or something fails. It always returns a RunResult;
// the error is non-nil only when the run failed — exit reason
// internal_error (a failing tool handler or trace is never mistaken for a
// normal end) or model_error — and then wraps the cause, so that
// errors.As finds, say, the adapter's *model.ProviderError. The result's
// Error field is the same text, clipped to MaxMessageBytes. A run that
// paused (Options.PauseAfter) returns a *PausedError and a result with
// only its RunId and StepsUsed.
func Run(ctx context.Context, task gen.Task, model Model, opts Options) (gen.RunResult, error) {
	l := &loop{task: task, model: model, opts: opts, runID: opts.RunID, max: orDefault(opts.MaxSteps, DefaultMaxSteps),
		ctxb: newContextBudget(model, opts.Compaction), stuck: newStuckDetector(opts.Stuck),
		obsLines: orDefault(opts.MaxObservationLines, DefaultMaxObservationLines)}
	if l.runID == "" {
		l.runID = NewRunID()
	}
	return l.run(ctx)
}

// orDefault is v when it is positive, else d.
func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

type loop struct {
	approvals approvals // the approval policy's state (approval.go)

	task    gen.Task
	model   Model
	tools   []gen.ToolSpec // the tools every request offers
	opts    Options
	runID   string
	max     int
	history historyLog
	usage   gen.Usage
	counted bool // a model reported usage
	start   time.Time
	check   *gen.CheckResult
	sandbox *gen.SandboxInfo
	vocab   vocabulary // what of a tool call the trace records verbatim
	ctxb    contextBudget
	stuck   *stuckDetector // nil when detection is off
	// the cap of an observation as the model sees it
	obsBytes, obsLines int
	offered            map[string]gen.ToolSpec // the tools the run offers, by name
}

// NewRunID returns a random run id of 16 hex digits.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// end is how the loop stops: a result and, for internal errors, the error.
type end struct {
	reason gen.ExitReason
	answer *string
	err    error // the cause, for every reason but finished
	steps  int
	pause  *State // the run paused (Options.PauseAfter): its state
}

func (l *loop) run(ctx context.Context) (gen.RunResult, error) {
	l.start = l.now()
	toolNames := []string{}
	if l.opts.Tools != nil {
		l.tools = l.opts.Tools.Specs()
		l.offered = make(map[string]gen.ToolSpec, len(l.tools))
		for _, s := range l.tools {
			toolNames = append(toolNames, s.Name)
			l.offered[s.Name] = s
		}
		l.vocab = newVocabulary(l.tools)
	}
	// The confinement of the run's commands: the tool runtime's, else the
	// check's.
	if s, ok := l.opts.Tools.(Sandboxed); ok {
		l.sandbox = s.SandboxInfo()
	}
	if s, ok := l.opts.Check.(Sandboxed); ok && l.sandbox == nil {
		l.sandbox = s.SandboxInfo()
	}
	st := l.opts.Resume
	steps := 0
	if st != nil {
		steps = st.StepsUsed // run_started was traced before the pause
	} else {
		started := l.event(0, gen.TraceEventTypeRunStarted)
		input := l.task.Prompt
		if f := l.opts.FollowUp; f != nil {
			input = f.Message
		}
		started.InputSummary = ptr(trace.Summary(input))
		started.MaxSteps = &l.max
		started.ToolNames = &toolNames
		started.Sandbox = l.sandbox
		if len(l.opts.ProjectDocs) > 0 {
			started.ProjectDocs = &l.opts.ProjectDocs
		}
		if err := l.emitDetail(Progress{Event: started}); err != nil {
			return l.finish(ctx, end{reason: gen.ExitReasonInternalError, err: err})
		}
	}
	if err := l.initApprovals(); err != nil {
		return l.finish(ctx, end{reason: gen.ExitReasonInternalError, err: err, steps: steps})
	}
	if st != nil {
		l.restore(st)
	} else if f := l.opts.FollowUp; f != nil {
		for _, it := range f.History {
			l.history.add(it.clone())
		}
		l.history.add(Item{UserMessage: &gen.UserMessage{Type: gen.UserMessageTypeUserMessage, Text: f.Message}})
	}
	return l.finish(ctx, l.steps(ctx))
}

func (l *loop) steps(ctx context.Context) end {
	var lastFeedback gen.FeedbackKind
	refused := false // the last model call was refused as over the context window
	first := 1
	if st := l.opts.Resume; st != nil {
		first = st.StepsUsed + 1
	}
	if e := l.fit(first - 1); e != nil {
		return *e
	}
	for step := first; step <= l.max; step++ {
		if l.opts.PauseAfter > 0 && step-first >= l.opts.PauseAfter && !refused {
			// Every step after the pause sets lastFeedback anew.
			st := l.state(step - 1)
			return end{pause: &st, steps: step - 1}
		}
		if err := ctx.Err(); err != nil {
			return end{reason: gen.ExitReasonCancelled, err: context.Cause(ctx), steps: step - 1}
		}
		if e := l.beforeCall(ctx, step); e != nil {
			return *e
		}
		t0 := l.now()
		req := l.request(l.history.view())
		if live := l.opts.Live; live != nil {
			live(Live{Step: step})
			req.OnText = func(delta string) { live(Live{Step: step, Text: delta}) }
		}
		turn, err := l.model.Next(ctx, req)
		modelMs, now := l.lap(t0)
		var invalid *InvalidOutputError
		if errors.As(err, &invalid) {
			if t := l.textOnly(invalid); t != nil {
				turn, err = *t, nil
			}
		}
		switch {
		case err == nil:
		case invalid != nil:
			refused = false
			l.ctxb.reported(invalid.Usage)
			if e := l.addUsage(invalid.Usage); e != nil {
				return end{reason: gen.ExitReasonTokenBudgetExceeded, err: e, steps: step}
			}
			if e := l.feedback(step, invalid, modelMs, now); e != nil {
				return *e
			}
			lastFeedback = gen.FeedbackKindInvalidModelOutput
			continue
		case ctx.Err() != nil:
			return end{reason: gen.ExitReasonCancelled, err: context.Cause(ctx), steps: step}
		case errors.Is(err, ErrContextLength):
			// One compaction and a retry of the step; a second refusal in
			// a row ends the run.
			if refused || l.opts.Compaction.Disabled {
				return end{reason: gen.ExitReasonContextWindowExceeded, err: fmt.Errorf("model: %w", err), steps: step}
			}
			refused = true
			if e := l.refusal(ctx, step, err); e != nil {
				return *e
			}
			step--
			continue
		default:
			return end{reason: gen.ExitReasonModelError, err: fmt.Errorf("model: %w", err), steps: step}
		}
		refused = false
		l.ctxb.reported(turn.Usage)
		lastFeedback = ""
		if err := checkTurn(&turn); err != nil {
			return end{reason: gen.ExitReasonInternalError, err: err, steps: step}
		}
		// The turn's tool calls and their observations are recorded
		// together, in one allocation; the calls are copied so the model
		// cannot change them. The history holds the turn as the model
		// gave it, then the results in the same order, so that adapters
		// send the turn back as one reply with several calls.
		recs := make([]toolStep, len(turn.Actions))
		for i, a := range turn.Actions {
			if a.ToolCall != nil {
				recs[i].call = *a.ToolCall
				l.history.add(Item{ToolCall: &recs[i].call})
			} else {
				recs[i].fin = *a.Finish
				l.history.add(Item{Finish: &recs[i].fin})
			}
		}
		for i := range turn.Actions {
			if err := l.traceAction(step, &turn, i, &recs[i], modelMs, now); err != nil {
				return end{reason: gen.ExitReasonInternalError, err: err, steps: step}
			}
		}
		if err := l.addUsage(turn.Usage); err != nil {
			return end{reason: gen.ExitReasonTokenBudgetExceeded, err: err, steps: step}
		}
		stuck := "" // the first pattern of repeats the turn's calls formed
		for i := range recs {
			if i > 0 && ctx.Err() != nil {
				return end{reason: gen.ExitReasonCancelled, err: context.Cause(ctx), steps: step}
			}
			if turn.Actions[i].ToolCall != nil {
				if e := l.callTool(ctx, step, &recs[i]); e != nil {
					return *e
				}
				if l.stuck != nil {
					if p := l.stuck.add(&recs[i].call, &recs[i].obs); stuck == "" {
						stuck = p
					}
				}
				continue
			}
			passed, e := l.gate(ctx, step) // for the last action of the turn, its finish
			if e != nil {
				return *e
			}
			if passed {
				return end{reason: gen.ExitReasonFinished, answer: &recs[i].fin.Answer, steps: step}
			}
			lastFeedback = gen.FeedbackKindFinishRejected
		}
		if stuck != "" {
			if l.stuck.warned {
				return end{reason: gen.ExitReasonStuck, err: fmt.Errorf("the run is stuck: %s, after a warning", stuck), steps: step}
			}
			l.stuck.warned = true
			ev := l.event(step, gen.TraceEventTypeModelFeedback)
			if e := l.tellModel(step, gen.FeedbackKindStuckWarning, stuckMessage(stuck), Progress{Event: ev}); e != nil {
				return *e
			}
		}
	}
	switch lastFeedback {
	case gen.FeedbackKindInvalidModelOutput:
		return end{reason: gen.ExitReasonInvalidModelOutput, err: fmt.Errorf("the step budget of %d ran out on invalid model output", l.max), steps: l.max}
	case gen.FeedbackKindFinishRejected:
		return end{reason: gen.ExitReasonCheckFailed, err: fmt.Errorf("the step budget of %d ran out with the finish rejected by the completion check", l.max), steps: l.max}
	}
	return end{reason: gen.ExitReasonMaxStepsExceeded, err: fmt.Errorf("the step budget of %d ran out", l.max), steps: l.max}
}

// request is the request of the run for history h.
func (l *loop) request(h History) *Request {
	return &Request{Task: l.task, History: h, Tools: l.tools}
}

// toolStep is what an action of a turn adds to the history: a tool call
// and its observation, or a finish.
type toolStep struct {
	call gen.ToolCall
	obs  gen.Observation // the whole observation, for the Observer
	seen gen.Observation // obs as the model sees it: its content capped
	fin  gen.Finish
}

// feedback turns invalid model output into feedback for the next step; a
// non-nil end stops the run.
func (l *loop) feedback(step int, invalid *InvalidOutputError, modelMs float64, now time.Time) *end {
	ev := l.eventAt(step, gen.TraceEventTypeModelFeedback, now)
	ev.ModelDurationMs = &modelMs
	ev.Usage = invalid.Usage
	if l.opts.RecordRaw {
		ev.RawResponse = &invalid.Raw
	}
	return l.tellModel(step, gen.FeedbackKindInvalidModelOutput, ClipMessage(invalid.Message), Progress{Event: ev})
}

// tellModel gives the model feedback of kind with message msg: it traces
// p.Event (its model_feedback or finish_rejected event) with the
// feedback's kind and summary, shows p with the feedback to the observer,
// and adds the feedback to the history. A non-nil end stops the run.
func (l *loop) tellModel(step int, kind gen.FeedbackKind, msg string, p Progress) *end {
	p.Feedback = &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: kind, Message: msg}
	p.Event.FeedbackKind = &p.Feedback.Kind
	p.Event.Output = ptr(trace.Summary(msg))
	if err := l.emitDetail(p); err != nil {
		return &end{reason: gen.ExitReasonInternalError, err: err, steps: step}
	}
	l.history.add(Item{Feedback: p.Feedback})
	return nil
}

// callTool executes the tool call of rec (already in the history) and
// records its observation, tied to the call's id; a non-nil end stops the
// run.
func (l *loop) callTool(ctx context.Context, step int, rec *toolStep) *end {
	call := &rec.call
	var err error
	run, e := l.approve(ctx, step, rec)
	if e != nil {
		return e
	}
	t0 := l.now()
	if !run {
		// rec.obs is the denial.
	} else if l.opts.Tools == nil {
		rec.obs = gen.Observation{Type: gen.ObservationTypeObservation, ToolName: call.ToolName, CallId: call.CallId, IsError: true,
			Content: fmt.Sprintf("error: unknown tool %q; no tools are available", textclip.Clip(call.ToolName, 64)), ErrorCode: ptr(gen.ErrorCodeUnknownTool)}
	} else {
		if live := l.opts.Live; live != nil {
			live(Live{Step: step, Call: call})
		}
		rec.obs, err = l.opts.Tools.Call(ctx, call)
		l.ran(call.ToolName)
	}
	toolMs, now := l.lap(t0)
	if err != nil {
		return &end{reason: gen.ExitReasonInternalError, err: err, steps: step}
	}
	obs := &rec.obs
	obs.CallId = call.CallId
	if obs.IsError {
		obs.Content = ClipMessage(obs.Content)
	}
	rec.seen = *obs
	seen := &rec.seen
	seen.Content, _ = TruncateOutput(obs.Content, l.obsBytes, l.obsLines, restHint(l.offered[call.ToolName].Hints, call, obs))
	ev := l.eventAt(step, gen.TraceEventTypeObservation, now)
	ev.ToolName = l.vocab.toolName(&obs.ToolName)
	ev.CallId = traceCallID(obs.CallId)
	ev.Output = ptr(trace.Summary(seen.Content)) // what the model saw, as replay compares it
	ev.IsError = &obs.IsError
	ev.ErrorCode = obs.ErrorCode
	ev.ToolDurationMs = &toolMs
	if err := l.emitDetail(Progress{Event: ev, Observation: obs, Seen: seen}); err != nil {
		return &end{reason: gen.ExitReasonInternalError, err: err, steps: step}
	}
	l.history.add(Item{Observation: seen})
	return nil
}

// gate runs the completion check, if any, for a finish (already in the
// history); it reports whether the check passed, or how the run ends when
// it could not run.
func (l *loop) gate(ctx context.Context, step int) (bool, *end) {
	if l.opts.Check == nil {
		return true, nil
	}
	t0 := l.now()
	res, err := l.opts.Check.Check(ctx)
	checkMs := ms(l.now().Sub(t0))
	if err != nil {
		if ctx.Err() != nil {
			return false, &end{reason: gen.ExitReasonCancelled, err: context.Cause(ctx), steps: step}
		}
		return false, &end{reason: gen.ExitReasonInternalError, err: fmt.Errorf("completion check: %w", err), steps: step}
	}
	l.check = &res
	if res.Passed {
		return true, nil
	}
	msg := fmt.Sprintf("The completion check failed with exit code %d, so the task is not finished. Fix the problem and finish again.", res.ExitCode)
	if res.OutputTail != nil && *res.OutputTail != "" {
		msg += "\nEnd of the check's output:\n" + clipTail(*res.OutputTail)
	}
	ev := l.event(step, gen.TraceEventTypeFinishRejected)
	ev.ExitCode = &res.ExitCode
	ev.ToolDurationMs = &checkMs
	return false, l.tellModel(step, gen.FeedbackKindFinishRejected, msg, Progress{Event: ev, Check: &res})
}

func (l *loop) addUsage(u *gen.Usage) error {
	if u == nil {
		return nil
	}
	l.counted = true
	l.usage.InputTokens += u.InputTokens
	l.usage.OutputTokens += u.OutputTokens
	if b := l.opts.TokenBudget; b > 0 && l.usage.InputTokens+l.usage.OutputTokens > b {
		return fmt.Errorf("the run used %d tokens, over its budget of %d", l.usage.InputTokens+l.usage.OutputTokens, b)
	}
	return nil
}

// finish builds the result, adds the patch, and records run_finished.
func (l *loop) finish(ctx context.Context, e end) (gen.RunResult, error) {
	if e.pause != nil {
		return gen.RunResult{RunId: ptr(l.runID), StepsUsed: e.steps}, &PausedError{State: *e.pause}
	}
	if l.opts.Ended != nil {
		l.opts.Ended(l.state(e.steps))
	}
	res := gen.RunResult{RunId: ptr(l.runID), ExitReason: e.reason, Answer: e.answer, StepsUsed: e.steps, Check: l.check, Sandbox: l.sandbox}
	if l.counted {
		res.Usage = ptr(l.usage)
	}
	if l.ctxb.learned {
		res.ContextWindow = ptr(l.ctxb.window)
	}
	if p, ok := l.opts.Tools.(Patcher); ok {
		// The patch is read even after a cancellation: the edits were made.
		patch, err := p.Patch(context.WithoutCancel(ctx))
		if err != nil && e.reason != gen.ExitReasonInternalError {
			e = end{reason: gen.ExitReasonInternalError, err: fmt.Errorf("patch: %w", err), steps: e.steps}
			res.ExitReason, res.Answer = e.reason, nil
		}
		if patch != "" {
			res.Patch = &patch
		}
	}
	if e.err != nil {
		res.Error = ptr(ClipMessage(e.err.Error()))
	}
	ev := l.event(e.steps, gen.TraceEventTypeRunFinished)
	ev.ExitReason = &res.ExitReason
	ev.StepsUsed = &res.StepsUsed
	ev.Error = res.Error
	ev.DurationMs = ptr(ms(l.now().Sub(l.start)))
	ev.Usage = res.Usage
	if err := l.emitDetail(Progress{Event: ev, Result: &res}); err != nil && e.reason != gen.ExitReasonInternalError {
		res.ExitReason, res.Answer = gen.ExitReasonInternalError, nil
		res.Error = ptr(ClipMessage(err.Error()))
		e.err = err
	}
	if res.ExitReason == gen.ExitReasonInternalError || res.ExitReason == gen.ExitReasonModelError {
		return res, e.err
	}
	return res, nil
}

// traceAction records the model_action event of action i of turn; rec
// holds the loop's copy of it. The first action's event carries the model
// call's duration and usage.
func (l *loop) traceAction(step int, turn *Turn, i int, rec *toolStep, modelMs float64, now time.Time) error {
	action := &turn.Actions[i]
	ev := l.eventAt(step, gen.TraceEventTypeModelAction, now)
	if i == 0 {
		ev.ModelDurationMs = &modelMs
		ev.Usage = turn.Usage
	}
	if l.opts.RecordRaw {
		ev.RawResponse = ptr(action.Raw)
	}
	p := Progress{Event: ev}
	if action.ToolCall != nil {
		call := &rec.call
		ev.ActionType = ptr(gen.ActionTypeToolCall)
		ev.ToolName = l.vocab.toolName(&call.ToolName)
		ev.CallId = traceCallID(call.CallId)
		ev.ArgumentKeys = ptr(l.vocab.argumentKeys(call.ToolName, call.Arguments))
		p.ToolCall = call
	} else {
		ev.ActionType = ptr(gen.ActionTypeFinish)
		ev.Output = ptr(trace.Summary(rec.fin.Answer))
		p.Finish = &rec.fin
	}
	if text := p.Text(); text != nil {
		ev.TextSummary = ptr(trace.Summary(*text))
	}
	return l.emitDetail(p)
}

// lap returns the time since t0 in milliseconds and the current time, for
// the event that records the lap.
func (l *loop) lap(t0 time.Time) (float64, time.Time) {
	now := l.now()
	return ms(now.Sub(t0)), now
}

func (l *loop) event(step int, typ gen.TraceEventType) *gen.TraceEvent {
	return l.eventAt(step, typ, l.now())
}

// eventAt is a new event of the run at time now.
func (l *loop) eventAt(step int, typ gen.TraceEventType, now time.Time) *gen.TraceEvent {
	return &gen.TraceEvent{RunId: l.runID, Step: step, EventType: typ, Time: now.UTC()}
}

// emitDetail traces p.Event and shows p, with its raw details, to the observer.
func (l *loop) emitDetail(p Progress) error {
	if l.opts.Trace != nil {
		if err := l.opts.Trace.Emit(p.Event); err != nil {
			return err
		}
	}
	if l.opts.Observer != nil {
		l.opts.Observer(p)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func ptr[T any](v T) *T { return &v }

// Live is news of the step in progress for Options.Live: with Call set,
// that tool call starts to run now; else with Text empty, the model call
// of Step started; otherwise Text is the next piece of the model's text.
type Live struct {
	Step int
	Text string
	Call *gen.ToolCall
}

// Progress is one event of a run as an Observer sees it: the trace event
// plus the raw values the trace only summarizes. It is for display; the
// pointers are the loop's own and must not be modified.
type Progress struct {
	Event       *gen.TraceEvent
	ToolCall    *gen.ToolCall      // model_action of a tool call
	Finish      *gen.Finish        // model_action of a finish
	Observation *gen.Observation   // observation: the whole of it
	Seen        *gen.Observation   // observation: as the model sees it (its content capped)
	Feedback    *gen.ModelFeedback // model_feedback and finish_rejected
	Result      *gen.RunResult     // run_finished
	Check       *gen.CheckResult   // finish_rejected: the check that failed
	// Summary and History are a history_compacted's: the summary the
	// model wrote ("" when none) and the history as the model sees it
	// after the compaction.
	Summary string
	History History
	// ApprovalReason is the approval_requested call's ApprovalRequest.Reason
	// (why it is asked beyond the policy), known before the Approver is;
	// on approval_decided, the decision's reason.
	ApprovalReason string
}

// Text is what the model wrote beside its actions, on the model_action of
// a turn's first action; nil otherwise.
func (p Progress) Text() *string {
	switch {
	case p.ToolCall != nil:
		return p.ToolCall.Text
	case p.Finish != nil:
		return p.Finish.Text
	}
	return nil
}
