package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/trace"
)

func write(id, path, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "write_file", "call_id": id,
		"arguments": map[string]any{"path": path, "content": content}})
	return string(b)
}

// approvalServer is a server whose workspace root it returns, with an sdk
// client.
func approvalServer(t *testing.T) (*server.Server, *sdk.Client, string) {
	t.Helper()
	srv, url, root := serveRuns(t, server.Config{})
	c, err := sdk.New(url, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, root
}

func writesRun(responses ...string) gen.CreateRunRequest {
	p := gen.ApprovalPolicyWrites
	return gen.CreateRunRequest{Task: gen.Task{Prompt: "write the files"}, Model: sdk.Script(responses...), ApprovalPolicy: &p, MaxSteps: ptr(10)}
}

func ptr[T any](v T) *T { return &v }

// The iterator yields each request with its arguments, in order (the two
// calls of one turn one after the other); approve runs a call, deny
// answers the model and the run goes on, approve_for_run lets later calls
// of the tool through; the events never hold the arguments.
func TestApprovalsThroughTheSDK(t *testing.T) {
	t.Parallel()
	_, c, root := approvalServer(t)
	ctx := context.Background()
	const secret = "ghp_0123456789abcdefSECRET"
	turn := `{"actions":[` + write("w1", "a.txt", "a") + "," + write("w2", "b.txt", "b") + `]}`
	run, err := c.CreateRun(ctx, writesRun(turn, write("w3", "c.txt", secret), write("w4", "d.txt", "d"), `{"type":"finish","answer":"done"}`))
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	for p, err := range c.Approvals(ctx, run.Id) {
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, p.CallId)
		if p.ToolName != "write_file" || p.Arguments["path"] == nil || p.ExpiresAt == nil {
			t.Errorf("pending = %+v", p)
		}
		var err error
		switch p.CallId {
		case "w1":
			if got, _ := c.GetRun(ctx, run.Id); got.Status != gen.RunStatusWaitingForApproval {
				t.Errorf("status = %s while w1 waits", got.Status)
			}
			_, err = c.Approve(ctx, run.Id, p.CallId, "")
		case "w2":
			_, err = c.Deny(ctx, run.Id, p.CallId, "not b")
		default:
			if p.Arguments["content"] != secret {
				t.Errorf("the arguments of %s = %v, want them whole", p.CallId, p.Arguments)
			}
			_, err = c.ApproveForRun(ctx, run.Id, p.CallId, "ok")
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Approve(ctx, run.Id, p.CallId, ""); !errors.Is(err, sdk.ErrConflict) {
			t.Errorf("deciding %s twice: %v, want ErrConflict", p.CallId, err)
		}
	}
	if diff := cmp.Diff([]string{"w1", "w2", "w3"}, asked); diff != "" {
		t.Fatalf("asked (-want +got):\n%s", diff)
	}
	done, err := c.Wait(ctx, run.Id)
	if err != nil || done.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v, %v", done, err)
	}
	for name, want := range map[string]bool{"a.txt": true, "b.txt": false, "c.txt": true, "d.txt": true} {
		if _, err := os.Stat(filepath.Join(root, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
	var decisions []string
	for ev, err := range c.Events(ctx, run.Id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), "not b") {
			t.Errorf("an event holds an argument value or a reason: %s", b)
		}
		switch {
		case ev.Decision != nil:
			decisions = append(decisions, string(*ev.Decision))
		case ev.ErrorCode != nil:
			decisions = append(decisions, string(*ev.ErrorCode))
		}
	}
	if diff := cmp.Diff([]string{"approve", "deny", "denied", "approve_for_run"}, decisions); diff != "" {
		t.Errorf("decisions and error codes in the events (-want +got):\n%s", diff)
	}
	if _, err := c.Approve(ctx, run.Id, "w1", ""); !errors.Is(err, sdk.ErrConflict) {
		t.Errorf("deciding in a finished run: %v, want ErrConflict", err)
	}
}

// A run waiting for approval can be cancelled, times out as a denial, and
// ends interrupted when the server stops.
func TestApprovalWaitEndsThroughTheSDK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout int
		end     func(t *testing.T, srv *server.Server, c *sdk.Client, id string)
		want    gen.ExitReason
	}{
		{"cancel", 0, func(t *testing.T, _ *server.Server, c *sdk.Client, id string) {
			if _, err := c.Cancel(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}, gen.ExitReasonCancelled},
		{"timeout", 1, func(*testing.T, *server.Server, *sdk.Client, string) {}, gen.ExitReasonFinished},
		{"server stops", 0, func(t *testing.T, srv *server.Server, _ *sdk.Client, _ string) {
			go srv.Shutdown(context.Background())
		}, gen.ExitReasonInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each has its own server; the timeout case waits a second
			srv, c, _ := approvalServer(t)
			ctx := context.Background()
			req := writesRun(write("w1", "a.txt", "a"), `{"type":"finish","answer":"done"}`)
			if tt.timeout > 0 {
				req.ApprovalTimeoutSeconds = &tt.timeout
			}
			run, err := c.CreateRun(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			next, stop := iter.Pull2(c.Approvals(ctx, run.Id))
			defer stop()
			if p, err, ok := next(); !ok || err != nil || p.CallId != "w1" {
				t.Fatalf("first request = %+v, %v, %v", p, err, ok)
			}
			tt.end(t, srv, c, run.Id)
			var evs []gen.TraceEvent
			for ev, err := range c.Events(ctx, run.Id, 0) {
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
			last := evs[len(evs)-1]
			if *last.ExitReason != tt.want {
				t.Fatalf("run ended %s (%v), want %s", *last.ExitReason, deref(last.Error), tt.want)
			}
			if tt.timeout > 0 {
				i := slices.IndexFunc(evs, func(ev gen.TraceEvent) bool { return ev.EventType == gen.TraceEventTypeApprovalDecided })
				if i < 0 || *evs[i].Decision != gen.ApprovalDecisionDeny || *evs[i].Output != trace.Summary(agent.TimeoutReason(time.Second)) ||
					*evs[i+1].ErrorCode != gen.ErrorCodeDenied {
					t.Fatalf("events %+v lack the timeout's denial", evs)
				}
			}
		})
	}
}
