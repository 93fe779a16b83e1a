package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/trace"
)

// Approvals: the package comment (agent.go) says what each policy asks
// about, what it never asks about, and what an approve_for_run covers.

// ApprovalRequest is a tool call that the run's approval policy says needs
// a person's decision. Call is the loop's copy of the call, with full
// arguments; its CallId is always set, and is what a decision is
// addressed by (the server's approvals list and POST
// /v1/runs/{id}/approvals/{call_id}, the trace's approval events). It is
// the model's call id when that is a plain id the trace records verbatim
// (letters, digits, _ and -, at most 64 bytes, not shaped like a key) that
// no earlier request of the run had; any other call — no id, an id such
// as ., .., a/b or sk-proj-…, a re-used id — gets one from the loop,
// "approval-N", so that every call can be decided by a URL path segment.
// The Observation still carries the model's own id.
type ApprovalRequest struct {
	RunID string
	Step  int
	Call  gen.ToolCall
	// Reason says what the person should know beyond the call itself,
	// or is empty: for a tool that runs commands, that files in the
	// workspace changed since the tool was last approved in this run (an
	// approve_for_run of it lapsed for that reason).
	Reason string
}

// Approval is a person's decision on an ApprovalRequest. Reason is told to
// the model on a denial; the trace keeps only its summary.
type Approval struct {
	Decision gen.ApprovalDecision // spec enum: approve | approve_for_run | deny
	Reason   string
}

// Approver decides on a tool call that the run's approval policy says needs
// a person. It blocks until decided or ctx is done. A timeout is a deny with
// a reason the Approver sets (see WithApprovalTimeout).
//
// An error ends the run: interrupted when it wraps ErrInterrupted (the
// process serving the decision is stopping, as a server's shutdown),
// cancelled when ctx is done, internal_error otherwise.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to an Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	return f(ctx, req)
}

// DefaultApprovalTimeout is how long a tool call waits for a decision when
// its setup gives no other time.
const DefaultApprovalTimeout = 30 * time.Minute

// errApprovalTimeout is the cause of an approval wait that timed out.
var errApprovalTimeout = errors.New("no decision in time")

// WithApprovalTimeout returns an Approver that asks a, and denies the call
// with the reason TimeoutReason(d) when a has not decided within d. a
// sees the deadline as its ctx's; a d of 0 or less means
// DefaultApprovalTimeout.
func WithApprovalTimeout(a Approver, d time.Duration) Approver {
	if d <= 0 {
		d = DefaultApprovalTimeout
	}
	return ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Approval, error) {
		tctx, cancel := context.WithTimeoutCause(ctx, d, errApprovalTimeout)
		defer cancel()
		dec, err := a.Approve(tctx, req)
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), errApprovalTimeout) {
			return Approval{Decision: gen.ApprovalDecisionDeny, Reason: TimeoutReason(d)}, nil
		}
		return dec, err
	})
}

// TimeoutReason is the reason of a denial because no one decided within d.
func TimeoutReason(d time.Duration) string {
	return fmt.Sprintf("timeout: no decision within %s", d)
}

// NeedsApproval reports whether policy makes a call of tool (its spec, as
// the run's tool runtime gives it) wait for a decision (see the package
// comment): never (or ""): no call; commands: tools that run commands
// (run_command, and custom and MCP tools, whose effects the runtime cannot
// vouch for); writes: those and tools that write files; always: every
// call. An approve_for_run can spare a call the asking; NeedsApproval does
// not know of one.
func NeedsApproval(policy gen.ApprovalPolicy, tool gen.ToolSpec) bool {
	switch policy {
	case gen.ApprovalPolicyAlways:
		return true
	case gen.ApprovalPolicyCommands:
		return runsCommands(tool)
	case gen.ApprovalPolicyWrites:
		return runsCommands(tool) || tool.WritesFiles
	}
	return false
}

// runsCommands reports whether a call of tool may run code: its spec says
// so, or it is not one of the spec's built-in tools, whose traits the
// spec declares. A tool of any other runtime (a Go program's own, whose
// spec may leave the traits unset) may do anything.
func runsCommands(tool gen.ToolSpec) bool {
	return tool.RunsCommands || !builtinTools()[tool.Name]
}

// builtinTools is the set of the spec's built-in tools' names.
var builtinTools = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, t := range gen.BuiltinTools() {
		set[t.Name] = true
	}
	return set
})

// approvals is a loop's approval state.
type approvals struct {
	approved map[string]bool // tools approved for the rest of the run
	named    int             // call ids the loop gave
	asked    map[string]bool // the call ids of the run's requests so far
	// writes counts the calls of tools that write files that ran, and
	// approvedAt holds, for each tool that runs commands and was
	// approved, writes at its last approval: an approve_for_run of it
	// holds while the two are equal.
	writes     int
	approvedAt map[string]int
}

// ran notes that a call of the tool named ran (approved, or not asked
// about): one of a tool that writes files changes what the next command
// may run.
func (l *loop) ran(tool string) {
	if l.offered[tool].WritesFiles {
		l.approvals.writes++
	}
}

// initApprovals checks the options' policy and approver.
func (l *loop) initApprovals() error {
	a := &l.approvals
	a.approved, a.asked, a.approvedAt = map[string]bool{}, map[string]bool{}, map[string]int{}
	p := l.opts.ApprovalPolicy
	if p == "" || p == gen.ApprovalPolicyNever {
		return nil
	}
	if !p.Valid() {
		return fmt.Errorf("approval policy %q is not one of the spec's ApprovalPolicy values", textclip.Clip(string(p), 64))
	}
	if l.opts.Approver == nil {
		return fmt.Errorf("approval policy %s needs an Approver to ask", p)
	}
	return nil
}

// approve asks for a decision on rec's call when the policy needs one. It
// reports whether the call may run; when it may not, rec.obs is the
// denial. A non-nil end stops the run.
func (l *loop) approve(ctx context.Context, step int, rec *toolStep) (bool, *end) {
	a := &l.approvals
	name := rec.call.ToolName
	if tool, ok := l.offered[name]; !ok || !NeedsApproval(l.opts.ApprovalPolicy, tool) {
		return true, nil
	}
	// changed: the calls of tools that write files that ran since the
	// tool, one that runs commands, was last approved in the run.
	changed := 0
	if at, ok := a.approvedAt[name]; ok && runsCommands(l.offered[name]) {
		changed = a.writes - at
	}
	if a.approved[name] && changed == 0 {
		return true, nil
	}
	req := ApprovalRequest{RunID: l.runID, Step: step, Call: *Item{ToolCall: &rec.call}.clone().ToolCall}
	if changed > 0 {
		// The approval covered the commands, not code the run wrote
		// since: a person who let `sh build.sh` run did not see the
		// build.sh of now.
		delete(a.approved, name)
		calls := "calls"
		if changed == 1 {
			calls = "call"
		}
		req.Reason = fmt.Sprintf("files in the workspace changed since %s was last approved in this run: %d %s of tools that write files ran since",
			textclip.Clip(name, 64), changed, calls)
	}
	// A decision is addressed by call id, and the model writes the ids:
	// one an earlier request had would let a decision meant for that call
	// (a late click, a second person) decide this one; one the trace does
	// not record verbatim (not plain, or shaped like a key) could not be
	// decided by what the approval events show, nor by a URL (a browser
	// resolves . and .. as dot segments).
	if id := req.Call.CallId; id == nil || !verbatimID(*id) || a.asked[*id] {
		name := ""
		for name == "" || a.asked[name] {
			a.named++
			name = fmt.Sprintf("approval-%d", a.named)
		}
		req.Call.CallId = &name
	}
	a.asked[*req.Call.CallId] = true
	ev := l.approvalEvent(step, gen.TraceEventTypeApprovalRequested, &req.Call)
	ev.ArgumentKeys = ptr(l.vocab.argumentKeys(name, req.Call.Arguments))
	if err := l.emitDetail(Progress{Event: ev, ToolCall: &req.Call, ApprovalReason: req.Reason}); err != nil {
		return false, &end{reason: gen.ExitReasonInternalError, err: err, steps: step}
	}
	dec, err := l.opts.Approver.Approve(ctx, req)
	switch {
	case err == nil && !dec.Decision.Valid():
		err = fmt.Errorf("approval: the approver's decision %q is not one of the spec's ApprovalDecision values", textclip.Clip(string(dec.Decision), 64))
	case errors.Is(err, ErrInterrupted):
		return false, &end{reason: gen.ExitReasonInterrupted, err: err, steps: step}
	case err != nil && ctx.Err() != nil:
		return false, &end{reason: gen.ExitReasonCancelled, err: context.Cause(ctx), steps: step}
	case err != nil:
		err = fmt.Errorf("approval: %w", err)
	}
	if err != nil {
		return false, &end{reason: gen.ExitReasonInternalError, err: err, steps: step}
	}
	reason := ClipMessage(dec.Reason)
	ev = l.approvalEvent(step, gen.TraceEventTypeApprovalDecided, &req.Call)
	ev.Decision = &dec.Decision
	if reason != "" {
		ev.Output = ptr(trace.Summary(reason))
	}
	if err := l.emitDetail(Progress{Event: ev, ApprovalReason: reason}); err != nil {
		return false, &end{reason: gen.ExitReasonInternalError, err: err, steps: step}
	}
	if dec.Decision != gen.ApprovalDecisionDeny && runsCommands(l.offered[name]) {
		a.approvedAt[name] = a.writes
	}
	switch dec.Decision {
	case gen.ApprovalDecisionApproveForRun:
		a.approved[name] = true
	case gen.ApprovalDecisionDeny:
		msg := "error: a person denied this call of " + textclip.Clip(name, 64) + "; it was not run"
		if reason != "" {
			msg += ". Reason: " + reason
		}
		rec.obs = gen.Observation{Type: gen.ObservationTypeObservation, ToolName: name, CallId: rec.call.CallId, IsError: true,
			Content: msg, ErrorCode: ptr(gen.ErrorCodeDenied)}
		return false, nil
	}
	return true, nil
}

// approvalEvent is an approval event of call, its tool name and call id
// recorded as the trace records them.
func (l *loop) approvalEvent(step int, typ gen.TraceEventType, call *gen.ToolCall) *gen.TraceEvent {
	ev := l.event(step, typ)
	ev.ToolName = l.vocab.toolName(&call.ToolName)
	ev.CallId = traceCallID(call.CallId)
	return ev
}
