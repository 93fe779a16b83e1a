package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

func writeCall(id, path, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "write_file", "call_id": id,
		"arguments": map[string]any{"path": path, "content": content}})
	return string(b)
}

const doneAnswer = `{"type":"finish","answer":"done"}`

// approvalRequest is a run under the writes policy.
func approvalRequest(responses ...string) gen.CreateRunRequest {
	p := gen.ApprovalPolicyWrites
	return gen.CreateRunRequest{Task: gen.Task{Prompt: "write"}, Model: sdk.Script(responses...), ApprovalPolicy: &p, MaxSteps: ptr(10)}
}

// pending waits (at most 20 s) until run id waits for approval and returns
// its pending calls, read over HTTP.
func (ts *testServer) pending(id string) []gen.PendingApproval {
	ts.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, _, body := ts.do(http.MethodGet, "/v1/runs/"+id+"/approvals", "", nil)
		if status != http.StatusOK {
			ts.t.Fatalf("list approvals: %d %s", status, body)
		}
		var list gen.ApprovalList
		if err := json.Unmarshal(body, &list); err != nil {
			ts.t.Fatal(err)
		}
		if len(list.Approvals) > 0 {
			return list.Approvals
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("run %s asked for no approval in 20 s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// decide posts a decision and returns the status and body.
func (ts *testServer) decide(id, call, decision, reason string) (int, []byte) {
	ts.t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": decision, "reason": reason})
	status, _, resp := ts.do(http.MethodPost, "/v1/runs/"+id+"/approvals/"+call, "application/json", bytes.NewReader(body))
	return status, resp
}

// Over HTTP: a run waits with status waiting_for_approval, lists its
// pending call with the arguments, and goes on once the call is decided;
// the two calls of one turn are pending one after the other; a call
// decided twice is a 409, an unknown one a 404; a denial reaches the model
// and the run finishes.
func TestApprovalsOverHTTP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	turn := `{"actions":[` + writeCall("w1", "a.txt", "a") + "," + writeCall("w2", "b.txt", "b") + `]}`
	run := ts.create(approvalRequest(turn, doneAnswer))

	p := ts.pending(run.Id)
	if len(p) != 1 || p[0].CallId != "w1" || p[0].ToolName != "write_file" || p[0].Arguments["content"] != "a" || p[0].Step != 1 {
		t.Fatalf("pending = %+v, want w1 alone with its arguments", p)
	}
	if got, _ := ts.sdk.GetRun(context.Background(), run.Id); got.Status != gen.RunStatusWaitingForApproval {
		t.Fatalf("status = %s", got.Status)
	}
	if status, body := ts.decide(run.Id, "w2", "approve", ""); status != http.StatusNotFound {
		t.Fatalf("deciding w2 before it is asked: %d %s", status, body)
	}
	if status, body := ts.decide(run.Id, "w1", "approve", ""); status != http.StatusOK {
		t.Fatalf("approve w1: %d %s", status, body)
	}
	if status, _ := ts.decide(run.Id, "w1", "deny", ""); status != http.StatusConflict {
		t.Fatalf("deciding w1 twice: %d, want 409", status)
	}
	if p := ts.pending(run.Id); len(p) != 1 || p[0].CallId != "w2" {
		t.Fatalf("pending = %+v, want w2", p)
	}
	if status, body := ts.decide(run.Id, "w2", "deny", "b is generated"); status != http.StatusOK {
		t.Fatalf("deny w2: %d %s", status, body)
	}
	done := ts.wait(run.Id)
	if done.Result.ExitReason != gen.ExitReasonFinished || done.Result.StepsUsed != 2 {
		t.Fatalf("result = %+v", done.Result)
	}
	if _, err := os.Stat(filepath.Join(ts.cfg.WorkspaceRoot, "a.txt")); err != nil {
		t.Errorf("the approved write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ts.cfg.WorkspaceRoot, "b.txt")); err == nil {
		t.Error("the denied write happened")
	}
	if status, _ := ts.decide(run.Id, "w2", "approve", ""); status != http.StatusConflict {
		t.Errorf("deciding in a finished run: %d, want 409", status)
	}
	status, _, body := ts.do(http.MethodGet, "/v1/runs/"+run.Id+"/approvals", "", nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"approvals":[]`) {
		t.Errorf("approvals of a finished run: %d %s", status, body)
	}
	// The event stream and the trace hold the decisions, not the reason.
	_, _, stream := ts.do(http.MethodGet, "/v1/runs/"+run.Id+"/events", "", nil)
	var kinds []string
	for _, ev := range readSSE(t, bytes.NewReader(stream)) {
		switch ev.Data.EventType {
		case gen.TraceEventTypeApprovalRequested, gen.TraceEventTypeApprovalDecided:
			kinds = append(kinds, string(ev.Data.EventType)+" "+*ev.Data.CallId)
		case gen.TraceEventTypeObservation:
			if ev.Data.ErrorCode != nil {
				kinds = append(kinds, "observation "+string(*ev.Data.ErrorCode))
			}
		}
	}
	want := "approval_requested w1, approval_decided w1, approval_requested w2, approval_decided w2, observation denied"
	if got := strings.Join(kinds, ", "); got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	if bytes.Contains(stream, []byte("b is generated")) {
		t.Error("the event stream holds the denial's reason")
	}
}

// The server's approval timeout denies a call no one decided, and the run
// goes on; a run's approval_timeout_seconds overrides it.
func TestApprovalTimeoutOverHTTP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{Config: runner.Config{ApprovalTimeout: time.Millisecond}})
	run := ts.create(approvalRequest(writeCall("w1", "a.txt", "a"), doneAnswer))
	done := ts.wait(run.Id)
	if done.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result = %+v", done.Result)
	}
	if _, err := os.Stat(filepath.Join(ts.cfg.WorkspaceRoot, "a.txt")); err == nil {
		t.Error("the timed-out write happened")
	}
	// approve_for_run lets w2 through without asking (else it would wait
	// its hour, and the run not end).
	req := approvalRequest(writeCall("w1", "b.txt", "b"), writeCall("w2", "c.txt", "c"), doneAnswer)
	req.ApprovalTimeoutSeconds = ptr(3600)
	run = ts.create(req)
	if p := ts.pending(run.Id); p[0].ExpiresAt == nil || p[0].ExpiresAt.Sub(p[0].RequestedAt) < 59*time.Minute {
		t.Fatalf("pending = %+v, want it to expire in an hour", p)
	}
	if status, body := ts.decide(run.Id, "w1", "approve_for_run", ""); status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	if done := ts.wait(run.Id); done.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result = %+v", done.Result)
	}
	for _, name := range []string{"b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(ts.cfg.WorkspaceRoot, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Cancelling a waiting run ends it cancelled; a server that stops while a
// run waits ends it interrupted, and says so after a restart.
func TestApprovalWaitEndsOverHTTP(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: data}})
	cancelled := ts.create(approvalRequest(writeCall("w1", "a.txt", "a"), doneAnswer))
	ts.pending(cancelled.Id)
	if status, _, body := ts.do(http.MethodPost, "/v1/runs/"+cancelled.Id+"/cancel", "", nil); status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", status, body)
	}
	if r := ts.wait(cancelled.Id); r.Result.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("cancelled run = %+v", r.Result)
	}
	waiting := ts.create(approvalRequest(writeCall("w1", "a.txt", "a"), doneAnswer))
	ts.pending(waiting.Id)
	ts.close()

	ts2 := newTestServer(t, server.Config{Config: runner.Config{DataDir: data, WorkspaceRoot: ts.cfg.WorkspaceRoot}})
	r, err := ts2.sdk.GetRun(context.Background(), waiting.Id)
	if err != nil || r.Result == nil || r.Result.ExitReason != gen.ExitReasonInterrupted {
		t.Fatalf("the waiting run after a restart: %v %+v", err, r.Result)
	}
	if status, _ := ts2.decide(waiting.Id, "w1", "approve", ""); status != http.StatusConflict {
		t.Errorf("deciding after the restart: %d, want 409", status)
	}
	trace, err := os.ReadFile(filepath.Join(data, "traces", waiting.Id+".jsonl"))
	if err != nil || !bytes.Contains(trace, []byte(`"approval_requested"`)) || !bytes.Contains(trace, []byte(`"exit_reason":"interrupted"`)) {
		t.Fatalf("trace: %v\n%s", err, trace)
	}
}

// The trace and the event stream never hold an approval request's
// argument values; only the authenticated approvals endpoint does.
func TestApprovalArgumentsStayOutOfTheTrace(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLE-wJalrXUtnFEMI"
	ts := newTestServer(t, server.Config{})
	run := ts.create(approvalRequest(writeCall("w1", "creds.txt", secret), doneAnswer))
	if p := ts.pending(run.Id); p[0].Arguments["content"] != secret {
		t.Fatalf("pending = %+v", p)
	}
	status, _, _ := ts.do(http.MethodGet, "/v1/runs/"+run.Id+"/approvals", "", nil, "Authorization", "")
	if status != http.StatusUnauthorized {
		t.Fatalf("approvals without the token: %d, want 401", status)
	}
	if status, body := ts.decide(run.Id, "w1", "deny", ""); status != http.StatusOK {
		t.Fatalf("deny: %d %s", status, body)
	}
	ts.wait(run.Id)
	_, _, stream := ts.do(http.MethodGet, "/v1/runs/"+run.Id+"/events", "", nil)
	trace, err := os.ReadFile(filepath.Join(ts.cfg.DataDir, "traces", run.Id+".jsonl"))
	if err != nil || !bytes.Contains(trace, []byte(`"approval_requested"`)) {
		t.Fatalf("trace: %v\n%s", err, trace)
	}
	for name, b := range map[string][]byte{"trace": trace, "event stream": stream} {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("creds.txt")) {
			t.Errorf("the %s holds an argument value", name)
		}
	}
}

// A server killed (SIGKILL) while a run waits for approval: after a
// restart the run goes on from its transcript, its completed step
// replayed (nothing run again) and the approval asked again; approved, it
// finishes with the result of a run that was never interrupted.
func TestKill9WhileWaitingForApproval(t *testing.T) {
	t.Parallel()
	data, root := t.TempDir(), t.TempDir()
	cmd, c := startChild(t, data, root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := approvalRequest(calcResponses[0], writeCall("w1", "a.txt", "a"), doneAnswer)
	run, err := c.CreateRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(c.Approvals(ctx, run.Id))
	defer stop()
	if p, err, ok := next(); !ok || err != nil || p.CallId != "w1" {
		t.Fatalf("request = %+v, %v, %v", p, err, ok)
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(root, "a.txt")); err == nil {
		t.Fatal("the undecided write happened")
	}

	ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: data, WorkspaceRoot: root}})
	if p := ts.pending(run.Id); len(p) != 1 || p[0].CallId != "w1" || p[0].Arguments["path"] != "a.txt" {
		t.Fatalf("pending after the restart: %+v", p)
	}
	if status, body := ts.decide(run.Id, "w1", "approve", ""); status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	resumed := ts.wait(run.Id).Result
	uninterrupted := ts.create(req)
	ts.pending(uninterrupted.Id)
	ts.decide(uninterrupted.Id, "w1", "approve", "")
	want := ts.wait(uninterrupted.Id).Result
	if resumed.ExitReason != gen.ExitReasonFinished || resumed.ExitReason != want.ExitReason || resumed.StepsUsed != want.StepsUsed || *resumed.Answer != *want.Answer {
		t.Fatalf("resumed %+v, uninterrupted %+v", resumed, want)
	}
	var types []gen.TraceEventType
	for ev, err := range ts.sdk.Events(ctx, run.Id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.EventType)
	}
	if got := fmt.Sprint(types); got != "[run_started model_action observation model_action approval_requested approval_decided observation model_action run_finished]" {
		t.Errorf("events = %s", got)
	}
	if data, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(data) != "a" {
		t.Errorf("a.txt: %q, %v", data, err)
	}
}

// A call id is the model's: one that reuses the id of a call already
// decided must not inherit a decision meant for that call. A second
// person's approval of the first (harmless) call, arriving after the model
// asked again under the same id with other arguments, is a 409 and does
// not run the new call.
func TestStaleDecisionDoesNotApproveAReusedCallID(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	run := ts.create(approvalRequest(writeCall("x", "harmless.txt", "a"), writeCall("x", "evil.txt", "b"), doneAnswer))
	if p := ts.pending(run.Id); len(p) != 1 || p[0].CallId != "x" {
		t.Fatalf("pending = %+v, want x", p)
	}
	if status, body := ts.decide(run.Id, "x", "deny", ""); status != http.StatusOK {
		t.Fatalf("deny x: %d %s", status, body)
	}
	var p []gen.PendingApproval
	for p = ts.pending(run.Id); p[0].Step != 2; p = ts.pending(run.Id) {
		time.Sleep(5 * time.Millisecond)
	}
	if p[0].CallId == "x" {
		t.Errorf("the second request has the decided call's id %q", p[0].CallId)
	}
	if status, body := ts.decide(run.Id, "x", "approve", ""); status != http.StatusConflict {
		t.Errorf("a stale approval of x: %d %s, want 409", status, body)
	}
	if status, body := ts.decide(run.Id, p[0].CallId, "deny", ""); status != http.StatusOK && status != http.StatusConflict {
		t.Fatalf("deny %s: %d %s", p[0].CallId, status, body)
	}
	ts.wait(run.Id)
	if _, err := os.Stat(filepath.Join(ts.cfg.WorkspaceRoot, "evil.txt")); err == nil {
		t.Error("the stale approval ran the second call")
	}
}

// A command call asked about again because files changed since run_command
// was approved for the run lists why, so the person sees what the
// approval no longer covers.
func TestPendingApprovalSaysWhyItIsAskedAgain(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{Config: runner.Config{AllowCommands: true}})
	command := func(id, cmd string) string {
		b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "run_command", "call_id": id, "arguments": map[string]any{"command": cmd}})
		return string(b)
	}
	req := approvalRequest(command("c1", "true"), writeCall("w1", "build.sh", "echo rewritten"), command("c2", "sh build.sh"), doneAnswer)
	p := gen.ApprovalPolicyCommands
	req.ApprovalPolicy = &p
	run := ts.create(req)
	if got := ts.pending(run.Id); len(got) != 1 || got[0].CallId != "c1" || got[0].Reason != nil {
		t.Fatalf("pending = %+v, want c1 with no reason", got)
	}
	if status, body := ts.decide(run.Id, "c1", "approve_for_run", ""); status != http.StatusOK {
		t.Fatalf("approve_for_run c1: %d %s", status, body)
	}
	got := ts.pending(run.Id)
	if len(got) != 1 || got[0].CallId != "c2" || got[0].Reason == nil || !strings.Contains(*got[0].Reason, "files in the workspace changed") {
		t.Fatalf("pending = %+v, want c2 with the reason that files changed", got)
	}
	if status, body := ts.decide(run.Id, "c2", "approve", ""); status != http.StatusOK {
		t.Fatalf("approve c2: %d %s", status, body)
	}
	if done := ts.wait(run.Id); done.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result = %+v", done.Result)
	}
}
