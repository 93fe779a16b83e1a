package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// writeCall is a write_file call of path with content, as a script model
// reads it.
func writeCall(id, path, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "write_file", "call_id": id,
		"arguments": map[string]any{"path": path, "content": content}})
	return string(b)
}

// fileRuntime is a runtime with the file tools (no commands) on a new
// workspace directory, which it returns.
func fileRuntime(t *testing.T) (*tools.Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	return rt, dir
}

// scripted is an Approver that answers from a list and records what it
// was asked.
type scripted struct {
	mu      sync.Mutex
	answers []agent.Approval
	asked   []agent.ApprovalRequest
}

func (s *scripted) Approve(_ context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, req)
	if len(s.answers) == 0 {
		return agent.Approval{}, errors.New("asked more often than scripted")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func (s *scripted) callIDs() []string {
	var ids []string
	for _, r := range s.asked {
		ids = append(ids, *r.Call.CallId)
	}
	return ids
}

// The policies follow what the run's tools say they do: commands asks
// about run_command, writes about it and the tools that write the
// workspace, always about everything. A tool the spec does not declare (a
// custom tool whose handler is a command, an MCP server's tool) may do
// anything: its runtime says it runs commands, so both commands and writes
// ask about it.
func TestNeedsApprovalFollowsTheToolSpecs(t *testing.T) {
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	var specs []gen.ToolSpec
	var names []string
	for _, d := range reg.Defs() {
		specs = append(specs, d.Spec)
		names = append(names, d.Spec.Name)
	}
	specs = append(specs, gen.ToolSpec{Name: "some_mcp_tool", RunsCommands: true})
	names = append(names, "some_mcp_tool")
	// A tool of a Go program's own runtime whose spec says nothing of
	// its traits may do anything: it is asked about as one that runs
	// commands, not let through.
	specs = append(specs, gen.ToolSpec{Name: "deploy"})
	names = append(names, "deploy")
	want := map[gen.ApprovalPolicy][]string{
		"":                          nil,
		gen.ApprovalPolicyNever:     nil,
		gen.ApprovalPolicyCommands:  {"run_command", "some_mcp_tool", "deploy"},
		gen.ApprovalPolicyWrites:    {"apply_patch", "edit_file", "run_command", "write_file", "some_mcp_tool", "deploy"},
		gen.ApprovalPolicyAlways:    names,
		gen.ApprovalPolicy("bogus"): nil,
	}
	for policy, w := range want {
		var got []string
		for _, s := range specs {
			if agent.NeedsApproval(policy, s) {
				got = append(got, s.Name)
			}
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("policy %q (-want +got):\n%s", policy, diff)
		}
	}
}

// Approve runs the call; the trace records the request and the decision
// between the call and its observation.
func TestApproveRunsTheCall(t *testing.T) {
	rt, dir := fileRuntime(t)
	ap := &scripted{answers: []agent.Approval{{Decision: gen.ApprovalDecisionApprove}}}
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(writeCall("c1", "a.txt", "hello\n"), finish),
		agent.Options{Tools: rt, Trace: log, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("the approved write did not happen: %q, %v", b, err)
	}
	if len(ap.asked) != 1 || ap.asked[0].Step != 1 || ap.asked[0].RunID != *res.RunId || ap.asked[0].Call.Arguments["content"] != "hello\n" {
		t.Fatalf("asked = %+v", ap.asked)
	}
	want := []string{"run_started", "model_action", "approval_requested", "approval_decided", "observation", "model_action", "run_finished"}
	if diff := cmp.Diff(want, log.types()); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	req, dec := log.events[2], log.events[3]
	if *req.ToolName != "write_file" || *req.CallId != "c1" || !cmp.Equal(*req.ArgumentKeys, []string{"content", "path"}) {
		t.Errorf("approval_requested = %+v", req)
	}
	if *dec.CallId != "c1" || *dec.Decision != gen.ApprovalDecisionApprove || dec.Output != nil {
		t.Errorf("approval_decided = %+v", dec)
	}
}

// A denial does not run the call: the model gets an error observation of
// code denied with the reason, and the run goes on.
func TestDenyAnswersTheModelAndTheRunGoesOn(t *testing.T) {
	rt, dir := fileRuntime(t)
	ap := &scripted{answers: []agent.Approval{{Decision: gen.ApprovalDecisionDeny, Reason: "not that file"}}}
	log := &eventLog{}
	script := model.NewScript(writeCall("c1", "a.txt", "x"), finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script,
		agent.Options{Tools: rt, Trace: log, ApprovalPolicy: gen.ApprovalPolicyAlways, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the denied write happened: %v", err)
	}
	obs := script.Calls()[1].History.At(1).Observation
	if obs == nil || !obs.IsError || obs.ErrorCode == nil || *obs.ErrorCode != gen.ErrorCodeDenied || *obs.CallId != "c1" ||
		!strings.Contains(obs.Content, "not that file") || obs.ToolName != "write_file" {
		t.Fatalf("the model saw %+v, want a denied observation with the reason", obs)
	}
	dec := log.events[3]
	if *dec.Decision != gen.ApprovalDecisionDeny || *dec.Output != trace.Summary("not that file") {
		t.Errorf("approval_decided = %+v", dec)
	}
	if ev := log.events[4]; *ev.ErrorCode != gen.ErrorCodeDenied {
		t.Errorf("observation = %+v", ev)
	}
}

// approve_for_run lets later calls of the same tool through without
// asking; other tools are still asked about.
func TestApproveForRunIsPerTool(t *testing.T) {
	rt, dir := fileRuntime(t)
	edit := `{"type":"tool_call","tool_name":"edit_file","call_id":"c3","arguments":{"path":"a.txt","old_text":"one","new_text":"three"}}`
	ap := &scripted{answers: []agent.Approval{{Decision: gen.ApprovalDecisionApproveForRun}, {Decision: gen.ApprovalDecisionDeny}}}
	script := model.NewScript(writeCall("c1", "a.txt", "one"), writeCall("c2", "b.txt", "two"), edit, finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script,
		agent.Options{Tools: rt, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"c1", "c3"}, ap.callIDs()); diff != "" {
		t.Fatalf("asked about (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"a.txt": "one", "b.txt": "two"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
}

// The calls of one turn are asked about in order, each once the one
// before it was decided and ran; calls the policy does not cover run
// without asking.
func TestTurnCallsAreAskedInOrder(t *testing.T) {
	rt, dir := fileRuntime(t)
	read := `{"type":"tool_call","tool_name":"read_file","call_id":"r1","arguments":{"path":"a.txt"}}`
	var seen []bool
	ap := agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
		_, err := os.Stat(filepath.Join(dir, "a.txt"))
		seen = append(seen, err == nil)
		return agent.Approval{Decision: gen.ApprovalDecisionApprove}, nil
	})
	script := model.NewScript(turn(writeCall("w1", "a.txt", "1"), read, writeCall("w2", "b.txt", "2")), finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script,
		agent.Options{Tools: rt, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	// The first request came before a.txt existed, the second after.
	if diff := cmp.Diff([]bool{false, true}, seen); diff != "" {
		t.Fatalf("a.txt existed when asked (-want +got):\n%s", diff)
	}
	if obs := script.Calls()[1].History.At(4).Observation; obs.IsError {
		t.Fatalf("the read of the written file failed: %+v", obs)
	}
}

// A pending approval times out as a denial with reason timeout.
func TestApprovalTimeoutDenies(t *testing.T) {
	rt, _ := fileRuntime(t)
	var deadline bool
	blocked := agent.ApproverFunc(func(ctx context.Context, _ agent.ApprovalRequest) (agent.Approval, error) {
		_, deadline = ctx.Deadline()
		<-ctx.Done()
		return agent.Approval{}, ctx.Err()
	})
	script := model.NewScript(writeCall("c1", "a.txt", "x"), finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script,
		agent.Options{Tools: rt, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: agent.WithApprovalTimeout(blocked, time.Millisecond)})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if !deadline {
		t.Error("the approver's context has no deadline")
	}
	obs := script.Calls()[1].History.At(1).Observation
	if *obs.ErrorCode != gen.ErrorCodeDenied || !strings.Contains(obs.Content, agent.TimeoutReason(time.Millisecond)) {
		t.Fatalf("observation = %+v, want denied with the timeout reason", obs)
	}
}

// Cancelling the run while it waits ends it cancelled; an Approver that
// reports ErrInterrupted (a server stopping) ends it interrupted; any
// other error or a decision the spec does not know is an internal error.
func TestApprovalWaitEnds(t *testing.T) {
	cause := errors.New("stop requested")
	tests := []struct {
		name    string
		approve func(ctx context.Context, cancel context.CancelCauseFunc) (agent.Approval, error)
		want    gen.ExitReason
		errText string
	}{
		{"cancel", func(ctx context.Context, cancel context.CancelCauseFunc) (agent.Approval, error) {
			cancel(cause)
			<-ctx.Done()
			return agent.Approval{}, ctx.Err()
		}, gen.ExitReasonCancelled, "stop requested"},
		{"interrupted", func(context.Context, context.CancelCauseFunc) (agent.Approval, error) {
			return agent.Approval{}, fmt.Errorf("server stopping: %w", agent.ErrInterrupted)
		}, gen.ExitReasonInterrupted, "server stopping"},
		{"failure", func(context.Context, context.CancelCauseFunc) (agent.Approval, error) {
			return agent.Approval{}, errors.New("terminal closed")
		}, gen.ExitReasonInternalError, "approval: terminal closed"},
		{"unknown decision", func(context.Context, context.CancelCauseFunc) (agent.Approval, error) {
			return agent.Approval{Decision: "maybe"}, nil
		}, gen.ExitReasonInternalError, `decision "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, dir := fileRuntime(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			ap := agent.ApproverFunc(func(ctx context.Context, _ agent.ApprovalRequest) (agent.Approval, error) {
				return tt.approve(ctx, cancel)
			})
			log := &eventLog{}
			res, _ := agent.Run(ctx, gen.Task{Prompt: task}, model.NewScript(writeCall("c1", "a.txt", "x"), finish),
				agent.Options{Tools: rt, Trace: log, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
			if res.ExitReason != tt.want || res.Error == nil || !strings.Contains(*res.Error, tt.errText) || res.StepsUsed != 1 {
				t.Fatalf("result = %+v, want %s with %q", res, tt.want, tt.errText)
			}
			if _, err := os.Stat(filepath.Join(dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the undecided write happened: %v", err)
			}
			if got := log.types(); got[len(got)-2] != "approval_requested" {
				t.Fatalf("events = %v, want approval_requested before run_finished", got)
			}
		})
	}
}

// A policy that asks needs an Approver, and a policy must be one the
// spec knows: the run fails at its start, before any model call.
func TestApprovalSetupErrors(t *testing.T) {
	for name, opts := range map[string]agent.Options{
		"no approver":    {ApprovalPolicy: gen.ApprovalPolicyCommands},
		"unknown policy": {ApprovalPolicy: "sometimes", Approver: &scripted{}},
	} {
		t.Run(name, func(t *testing.T) {
			script := model.NewScript(finish)
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, opts)
			if err == nil || res.ExitReason != gen.ExitReasonInternalError || len(script.Calls()) != 0 {
				t.Fatalf("run = %+v, %v; want internal_error before any model call", res, err)
			}
		})
	}
}

// A call the model gave no id gets one from the loop, so a person can
// name it; the trace's approval events carry that id.
func TestCallWithoutIDIsNamed(t *testing.T) {
	rt, _ := fileRuntime(t)
	call := `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"x"}}`
	ap := &scripted{answers: []agent.Approval{{Decision: gen.ApprovalDecisionApprove}, {Decision: gen.ApprovalDecisionApprove}}}
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(call, call, finish),
		agent.Options{Tools: rt, Trace: log, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"approval-1", "approval-2"}, ap.callIDs()); diff != "" {
		t.Fatalf("call ids (-want +got):\n%s", diff)
	}
	var traced []string
	for _, ev := range log.events {
		if ev.EventType == gen.TraceEventTypeApprovalRequested || ev.EventType == gen.TraceEventTypeApprovalDecided {
			traced = append(traced, *ev.CallId)
		}
	}
	if diff := cmp.Diff([]string{"approval-1", "approval-1", "approval-2", "approval-2"}, traced); diff != "" {
		t.Fatalf("traced call ids (-want +got):\n%s", diff)
	}
}

// The model writes call ids, and a decision is addressed by one: an id an
// earlier request of the run had (the model's, or one the loop gave) is
// replaced, so that a decision meant for that call cannot decide this one.
func TestReusedCallIDIsRenamed(t *testing.T) {
	rt, _ := fileRuntime(t)
	withID := func(id string) string { return writeCall(id, "a.txt", id) }
	noID := `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"x"}}`
	approve := agent.Approval{Decision: gen.ApprovalDecisionApprove}
	ap := &scripted{answers: []agent.Approval{approve, approve, approve, approve}}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(withID("x"), withID("x"), withID("approval-1"), noID, finish),
		agent.Options{Tools: rt, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"x", "approval-1", "approval-2", "approval-3"}, ap.callIDs()); diff != "" {
		t.Fatalf("call ids (-want +got):\n%s", diff)
	}
}

// A decision is addressed by the request's call id, as a URL path segment
// (POST /v1/runs/{id}/approvals/{call_id}) and in the trace's approval
// events (which a durable engine decides by). An id a browser resolves as
// a dot segment (., .., %2e%2e), one that is no segment (a/b), one shaped
// like a key (which the trace must not hold) or a long one gets an
// approval id of the loop's: every call can be decided, by the id the
// request shows, which the approval events carry verbatim.
func TestOddCallIDsGetApprovalIDs(t *testing.T) {
	rt, _ := fileRuntime(t)
	odd := []string{"..", ".", "a/b", "%2e%2e", "sk-proj-" + strings.Repeat("A", 48), "a.b", " c1", strings.Repeat("i", 65), "c1"}
	var script []string
	var answers []agent.Approval
	for i, id := range odd {
		script = append(script, writeCall(id, fmt.Sprintf("f%d.txt", i), id))
		answers = append(answers, agent.Approval{Decision: gen.ApprovalDecisionApprove})
	}
	ap := &scripted{answers: answers}
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(append(script, finish)...),
		agent.Options{MaxSteps: 20, Tools: rt, Trace: log, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	want := []string{"approval-1", "approval-2", "approval-3", "approval-4", "approval-5", "approval-6", "approval-7", "approval-8", "c1"}
	if diff := cmp.Diff(want, ap.callIDs()); diff != "" {
		t.Fatalf("the requests' call ids (-want +got):\n%s", diff)
	}
	var traced, ran []string
	for _, ev := range log.events {
		switch ev.EventType {
		case gen.TraceEventTypeApprovalRequested:
			traced = append(traced, *ev.CallId)
		case gen.TraceEventTypeObservation:
			if ev.IsError == nil || *ev.IsError {
				t.Errorf("step %d: the approved call failed", ev.Step)
			}
			ran = append(ran, *ev.CallId)
		}
	}
	if diff := cmp.Diff(want, traced); diff != "" {
		t.Errorf("the approval_requested events' call ids (-want +got):\n%s", diff)
	}
	if len(ran) != len(odd) {
		t.Errorf("%d calls ran, want %d", len(ran), len(odd))
	}
}

// The trace and the events an observer sees never hold an approval
// request's argument values, nor a decision's reason verbatim.
func TestApprovalTraceHasNoArgumentValues(t *testing.T) {
	const secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	const why = "denied: reason-text-7c1d"
	rt, _ := fileRuntime(t)
	var file, shown bytes.Buffer
	ap := &scripted{answers: []agent.Approval{{Decision: gen.ApprovalDecisionDeny, Reason: why}}}
	opts := agent.Options{Tools: rt, Trace: trace.NewWriter(&file, trace.SyncNone), ApprovalPolicy: gen.ApprovalPolicyAlways, Approver: ap,
		Observer: func(p agent.Progress) {
			b, _ := json.Marshal(p.Event)
			shown.Write(b)
		}}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(writeCall("c1", ".env", "TOKEN="+secret), finish), opts)
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if !bytes.Contains(file.Bytes(), []byte(`"approval_requested"`)) || !bytes.Contains(file.Bytes(), []byte(`"approval_decided"`)) {
		t.Fatalf("the trace has no approval events:\n%s", file.Bytes())
	}
	for name, b := range map[string][]byte{"trace": file.Bytes(), "observer": shown.Bytes()} {
		for _, s := range []string{secret, ".env", why} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the %s holds %q", name, s)
			}
		}
	}
}

// Every built-in tool that may refuse to write a protected path writes
// files (or runs commands, which may touch a git directory), and every one
// that may answer commands_disabled runs commands: each must carry the
// spec's marker (x-specloop-writes, x-specloop-command, which its ToolSpec
// says), or the writes and commands policies would let it through without
// asking (a new apply_patch, say).
func TestWritingToolsAreMarked(t *testing.T) {
	checked := 0
	for _, tool := range gen.BuiltinTools() {
		spec := gen.ToolSpec{Name: tool.Name, WritesFiles: tool.WritesFiles, RunsCommands: tool.RunsCommands}
		for _, c := range tool.ErrorCodes {
			switch c {
			case gen.ErrorCodeProtectedPath:
				checked++
				// A command tool answers it when a command touched a git
				// directory; the writes policy asks about commands too.
				if !agent.NeedsApproval(gen.ApprovalPolicyWrites, spec) {
					t.Errorf("tool %s writes files (it lists protected_path) but is marked neither x-specloop-writes nor x-specloop-command", tool.Name)
				}
			case gen.ErrorCodeCommandsDisabled:
				checked++
				if !agent.NeedsApproval(gen.ApprovalPolicyCommands, spec) {
					t.Errorf("tool %s runs commands (it lists commands_disabled) but is not marked x-specloop-command: true", tool.Name)
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("checked %d tools; the spec has write_file, edit_file and run_command", checked)
	}
}

// commandRuntime is a runtime with the file tools and run_command, its
// commands unconfined (the tests' commands are harmless), on a new
// workspace directory.
func commandRuntime(t *testing.T) *tools.Runtime {
	t.Helper()
	ws, err := tools.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws, Sandbox: sandbox.Policy{Backend: sandbox.None}})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func commandCall(id, command string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "run_command", "call_id": id,
		"arguments": map[string]any{"command": command}})
	return string(b)
}

// An approve_for_run of a tool that runs commands lets its later calls
// through only while the run changes no file: once a call of a tool that
// writes files ran, the next command is asked about again (a person who
// let `sh build.sh` run did not see the build.sh the model wrote since),
// and the request says why. Under every policy that asks about commands.
func TestApproveForRunOfCommandsLapsesWhenFilesChange(t *testing.T) {
	script := func(rewrite bool) []string {
		s := []string{writeCall("w1", "build.sh", "echo one\n"), commandCall("c1", "sh build.sh")}
		if rewrite {
			s = append(s, writeCall("w2", "build.sh", "echo two\n"))
		}
		return append(s, commandCall("c2", "sh build.sh"), commandCall("c3", "sh build.sh"), finish)
	}
	for _, tc := range []struct {
		policy        gen.ApprovalPolicy
		rewrite       bool
		asked, reason []string
	}{
		{gen.ApprovalPolicyCommands, true, []string{"c1", "c2"}, []string{"", "changed"}},
		{gen.ApprovalPolicyCommands, false, []string{"c1"}, []string{""}},
		{gen.ApprovalPolicyWrites, true, []string{"w1", "c1", "c2"}, []string{"", "", "changed"}},
		{gen.ApprovalPolicyWrites, false, []string{"w1", "c1"}, []string{"", ""}},
		{gen.ApprovalPolicyAlways, true, []string{"w1", "c1", "c2"}, []string{"", "", "changed"}},
		{gen.ApprovalPolicyAlways, false, []string{"w1", "c1"}, []string{"", ""}},
	} {
		t.Run(fmt.Sprintf("%s rewrite=%v", tc.policy, tc.rewrite), func(t *testing.T) {
			var asked, reasons []string
			ap := agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
				asked = append(asked, *req.Call.CallId)
				r := ""
				if req.Reason != "" {
					r = "changed"
					if !strings.Contains(req.Reason, "files") || !strings.Contains(req.Reason, "run_command") {
						t.Errorf("the request says %q", req.Reason)
					}
				}
				reasons = append(reasons, r)
				return agent.Approval{Decision: gen.ApprovalDecisionApproveForRun}, nil
			})
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(script(tc.rewrite)...),
				agent.Options{MaxSteps: 10, Tools: commandRuntime(t), ApprovalPolicy: tc.policy, Approver: ap})
			if err != nil || res.ExitReason != gen.ExitReasonFinished {
				t.Fatalf("run = %+v, %v", res, err)
			}
			if diff := cmp.Diff(tc.asked, asked); diff != "" {
				t.Errorf("asked about (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.reason, reasons); diff != "" {
				t.Errorf("the requests' reasons (-want +got):\n%s", diff)
			}
		})
	}
}

// A single approval of a command is asked again anyway; the next request
// says when files changed since, and a denied write changes nothing.
func TestCommandRequestSaysFilesChanged(t *testing.T) {
	var reasons []string
	ap := agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
		reasons = append(reasons, req.Reason)
		if req.Call.ToolName == "write_file" && *req.Call.CallId == "w2" {
			return agent.Approval{Decision: gen.ApprovalDecisionDeny}, nil
		}
		return agent.Approval{Decision: gen.ApprovalDecisionApprove}, nil
	})
	script := model.NewScript(commandCall("c1", "true"), writeCall("w1", "a.txt", "x"), commandCall("c2", "true"),
		writeCall("w2", "a.txt", "y"), commandCall("c3", "true"), finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script,
		agent.Options{MaxSteps: 10, Tools: commandRuntime(t), ApprovalPolicy: gen.ApprovalPolicyAlways, Approver: ap})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if len(reasons) != 5 || reasons[0] != "" || reasons[1] != "" || reasons[2] == "" || reasons[3] != "" || reasons[4] != "" {
		t.Fatalf("the requests' reasons are %q: want only c2's to say files changed", reasons)
	}
}

// The lapse survives a pause: a durable engine that resumes the run
// between the write and the command still asks.
func TestApprovalLapseSurvivesAPause(t *testing.T) {
	asked := 0
	opts := agent.Options{RunID: "r", MaxSteps: 10, Tools: commandRuntime(t), PauseAfter: 1, ApprovalPolicy: gen.ApprovalPolicyCommands,
		Approver: agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
			asked++
			return agent.Approval{Decision: gen.ApprovalDecisionApproveForRun}, nil
		})}
	m := model.NewScript(commandCall("c1", "true"), writeCall("w1", "a.txt", "x"), commandCall("c2", "true"), commandCall("c3", "true"), finish)
	if res, _, err := runPausing(t, m, opts); err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if asked != 2 {
		t.Fatalf("asked %d times, want c1 and, after the write, c2", asked)
	}
}

// A re-used call id is renamed across a pause too: a durable engine that
// resumes the run between the two calls still gives the second one an id
// of its own.
func TestReusedCallIDIsRenamedAcrossAPause(t *testing.T) {
	rt, _ := fileRuntime(t)
	ap := &scripted{answers: []agent.Approval{{Decision: gen.ApprovalDecisionApprove}, {Decision: gen.ApprovalDecisionApprove}}}
	opts := agent.Options{RunID: "r", Tools: rt, PauseAfter: 1, ApprovalPolicy: gen.ApprovalPolicyWrites, Approver: ap}
	m := model.NewScript(writeCall("x", "a.txt", "1"), writeCall("x", "a.txt", "2"), finish)
	if res, _, err := runPausing(t, m, opts); err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"x", "approval-1"}, ap.callIDs()); diff != "" {
		t.Fatalf("call ids (-want +got):\n%s", diff)
	}
}
