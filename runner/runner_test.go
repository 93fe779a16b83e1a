package runner_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// script is a request whose model replays responses.
func script(t *testing.T, responses ...string) gen.CreateRunRequest {
	t.Helper()
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}}
	if err := req.Model.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: responses}); err != nil {
		t.Fatal(err)
	}
	return req
}

func newRunner(t *testing.T, data, root string) *runner.Runner {
	t.Helper()
	rn, err := runner.New(runner.Config{DataDir: data, WorkspaceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Shutdown(context.Background()) })
	return rn
}

// waitFor polls run id until ok says so; the deadline is a hang guard only.
func waitFor(t *testing.T, rn *runner.Runner, id string, ok func(gen.Run) bool) gen.Run {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		v, err := rn.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(v) {
			return v
		}
	}
	t.Fatalf("run %s never got there", id)
	return gen.Run{}
}

func finished(v gen.Run) bool { return v.Status == gen.RunStatusFinished }

// A run that was in flight when its runner stopped without a word (the
// log has its creation, not its end) ends interrupted when the next runner
// opens the data directory, in its record and its event stream.
func TestRecoveryEndsInFlightRunsInterrupted(t *testing.T) {
	t.Parallel()
	data, root := t.TempDir(), t.TempDir()
	line := `{"op":"created","id":"abc123","time":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(data, "runs.jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	rn := newRunner(t, data, root)
	v, err := rn.Get("abc123")
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != gen.RunStatusFinished || v.Result == nil || v.Result.ExitReason != gen.ExitReasonInterrupted {
		t.Fatalf("recovered run: %+v", v)
	}
	evs, err := rn.Events(context.Background(), "abc123", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer evs.Close()
	body, err := io.ReadAll(evs) // the stream ends after run_finished
	if err != nil {
		t.Fatal(err)
	}
	if want := "event: run_finished"; !strings.Contains(string(body), want) {
		t.Fatalf("events %q, want %q", body, want)
	}
}

// A run under an approval policy waits for approval (its status says so
// and its call is listed), goes on once decided, and a second run in the
// same workspace waits in the queue meanwhile. A cancelled run ends
// cancelled, and a finished one cannot be cancelled.
func TestApprovalsQueueAndCancel(t *testing.T) {
	t.Parallel()
	rn := newRunner(t, t.TempDir(), t.TempDir())
	write := `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"x"}}`
	req := script(t, write, `{"type":"finish","answer":"written"}`)
	policy := gen.ApprovalPolicyWrites
	req.ApprovalPolicy = &policy
	first, err := rn.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rn, first.Id, func(v gen.Run) bool { return v.Status == gen.RunStatusWaitingForApproval })
	second, err := rn.Create(context.Background(), script(t, `{"type":"finish","answer":"later"}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rn.Get(second.Id); v.Status != gen.RunStatusQueued {
		t.Fatalf("a run in a busy workspace is %s, want queued", v.Status)
	}
	list, err := rn.Approvals(first.Id)
	if err != nil || len(list) != 1 || list[0].ToolName != "write_file" {
		t.Fatalf("approvals: %+v, %v", list, err)
	}
	if _, err := rn.Decide(first.Id, list[0].CallId, agent.Approval{Decision: gen.ApprovalDecisionApprove}); err != nil {
		t.Fatal(err)
	}
	if v := waitFor(t, rn, first.Id, finished); v.Result.Answer == nil || *v.Result.Answer != "written" {
		t.Fatalf("approved run: %+v", v.Result)
	}
	if v := waitFor(t, rn, second.Id, finished); v.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("queued run: %+v", v.Result)
	}

	third, err := rn.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rn, third.Id, func(v gen.Run) bool { return v.Status == gen.RunStatusWaitingForApproval })
	if _, err := rn.Cancel(third.Id); err != nil {
		t.Fatal(err)
	}
	if v := waitFor(t, rn, third.Id, finished); v.Result.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("cancelled run: %+v", v.Result)
	}
	var re *runner.Error
	if _, err := rn.Cancel(third.Id); !errors.As(err, &re) || re.Kind != runner.Conflict {
		t.Fatalf("cancel a finished run: %v, want a Conflict", err)
	}
	if _, err := rn.Get("nosuchrun"); !errors.As(err, &re) || re.Kind != runner.NotFound {
		t.Fatalf("get an unknown run: %v, want NotFound", err)
	}
}

// snapshot copies the data directory as a crash would leave it.
func snapshot(t *testing.T, data string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(data)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A run in flight at a crash goes on from its transcript; one whose
// transcript is missing or unreadable ends interrupted, saying why.
func TestRecoveryResumesFromTheTranscriptOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	data := t.TempDir()
	rn := newRunner(t, data, root)
	write := `{"type":"tool_call","tool_name":"write_file","call_id":"w1","arguments":{"path":"a.txt","content":"x"}}`
	req := script(t, `{"type":"tool_call","tool_name":"list_files","arguments":{}}`, write, `{"type":"finish","answer":"written"}`)
	policy := gen.ApprovalPolicyWrites
	req.ApprovalPolicy = &policy
	v, err := rn.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rn, v.Id, func(v gen.Run) bool { return v.Status == gen.RunStatusWaitingForApproval })
	crashed := snapshot(t, data)
	rn.Shutdown(context.Background())

	for _, tc := range []struct {
		name, why string
		damage    func(path string) error
	}{
		{"missing", "its transcript is missing", os.Remove},
		{"unreadable", "its transcript cannot be read", func(path string) error { return os.WriteFile(path, []byte("{\"seq\":1}\n"), 0o600) }},
	} {
		dir := snapshot(t, crashed)
		if err := tc.damage(filepath.Join(dir, "transcripts", v.Id+".jsonl")); err != nil {
			t.Fatal(err)
		}
		got, err := newRunner(t, dir, t.TempDir()).Get(v.Id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Result == nil || got.Result.ExitReason != gen.ExitReasonInterrupted || !strings.Contains(*got.Result.Error, tc.why) {
			t.Errorf("%s transcript: %+v, want interrupted because %s", tc.name, got.Result, tc.why)
		}
	}

	rn2 := newRunner(t, snapshot(t, crashed), root)
	waitFor(t, rn2, v.Id, func(v gen.Run) bool { return v.Status == gen.RunStatusWaitingForApproval })
	if _, err := rn2.Decide(v.Id, "w1", agent.Approval{Decision: gen.ApprovalDecisionApprove}); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, rn2, v.Id, finished)
	if got.Result.ExitReason != gen.ExitReasonFinished || got.Result.StepsUsed != 3 || *got.Result.Answer != "written" {
		t.Fatalf("resumed run: %+v", got.Result)
	}
	entries, err := rn2.Transcript(v.Id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, e := range entries {
		if e.EventType == gen.TraceEventTypeModelAction {
			steps = append(steps, e.Step)
		}
	}
	if fmt.Sprint(steps) != "[1 2 3]" {
		t.Fatalf("the transcript's turns are at steps %v, want each once", steps)
	}
}
