package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// A run's max_observation_bytes reaches its loop: the observation the
// model saw (summarized in the trace) is capped by it, and by the spec's
// default when the field is absent.
func TestRunObservationCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	dir := filepath.Join(ts.cfg.WorkspaceRoot, "proj")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// 300 numbered lines of about 6 KiB: within the default cap, over 1 KiB.
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("a line of text\n", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := "proj"
	seen := func(capBytes *int) string {
		run := ts.wait(ts.create(gen.CreateRunRequest{
			Task: gen.Task{Prompt: "read"}, Workspace: &ws, MaxObservationBytes: capBytes,
			Model: sdk.Script(`{"type":"tool_call","tool_name":"read_file","arguments":{"path":"big.txt"}}`, `{"type":"finish","answer":"done"}`),
		}).Id)
		if run.Result.ExitReason != gen.ExitReasonFinished {
			t.Fatalf("result: %+v", run.Result)
		}
		resp, err := ts.raw.GetRunEvents(context.Background(), run.Id, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		for _, ev := range readSSE(t, resp.Body) {
			if ev.Data.EventType == gen.TraceEventTypeObservation {
				return *ev.Data.Output
			}
		}
		t.Fatal("no observation event")
		return ""
	}
	chars := func(summary string) int {
		var n int
		if _, err := fmt.Sscanf(summary, "chars=%d;", &n); err != nil {
			t.Fatalf("not a summary: %s", summary)
		}
		return n
	}
	if n := chars(seen(nil)); n <= 4000 {
		t.Fatalf("without a cap the model saw %d characters, want the whole read (about 4900)", n)
	}
	if n := chars(seen(ptr(1024))); n > 1024 {
		t.Fatalf("with max_observation_bytes 1024 the model saw %d characters", n)
	}
}
