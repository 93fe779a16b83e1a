package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// Commands are only allowed with a sandbox that works here, or with none
// asked for by name.
func TestAllowCommandsNeedsASandbox(t *testing.T) {
	t.Parallel()
	newServer := func(p sandbox.Policy) error {
		srv, err := server.New(server.Config{Config: runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), AllowCommands: true, Sandbox: p}})
		if err == nil {
			srv.Shutdown(context.Background())
		}
		return err
	}
	if err := newServer(sandbox.Policy{Backend: "chroot"}); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("an unusable sandbox was accepted: %v", err)
	}
	if err := newServer(sandbox.Policy{Backend: sandbox.None}); err != nil {
		t.Fatalf("none, asked for by name: %v", err)
	}
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap} {
		err := newServer(sandbox.Policy{Backend: b})
		if (err == nil) != (sandbox.Available(b) == nil) {
			t.Fatalf("%s: %v", b, err)
		}
	}
}

// A run's command cannot write outside its workspace, and the RunResult
// records the sandbox (the attacks themselves are tested per backend in
// package sandbox).
func TestRunCommandsAreSandboxed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{Config: runner.Config{AllowCommands: true}})
	outside := t.TempDir()
	script := "echo pwned > " + outside + "/x"
	call, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "run_command", "arguments": map[string]any{"command": script}})
	req := calcRequest()
	req.Model = sdk.Script(string(call), calcResponses[1])
	run := ts.wait(ts.create(req).Id)
	if run.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run %+v", run.Result)
	}
	if s := run.Result.Sandbox; s == nil || s.Backend == gen.SandboxInfoBackendNone || s.Network {
		t.Fatalf("sandbox %+v", s)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("the command wrote outside its workspace")
	}
}

// A run's setup runs once, sandboxed, in its workspace before the model's
// first call: one that tries to write outside the workspace fails, and
// the run ends setup_failed without a model call; one that passes leaves
// its work to the model and its result, redacted, in the RunResult.
func TestRunSetupIsSandboxed(t *testing.T) {
	t.Parallel()
	const secret = "setup-secret-3f9a1c7e5b"
	ts := newTestServer(t, server.Config{Config: runner.Config{AllowCommands: true, Secrets: []string{secret}}})
	outside := t.TempDir()
	req := calcRequest()
	req.Setup = ptr("echo pwned > " + outside + "/x")
	run := ts.wait(ts.create(req).Id)
	res := run.Result
	if res.ExitReason != gen.ExitReasonSetupFailed || res.StepsUsed != 0 || res.Setup == nil || res.Setup.Passed || res.Setup.ExitCode == 0 || res.Error == nil {
		t.Fatalf("a setup writing outside the workspace: %+v (setup %+v)", res, res.Setup)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("the setup wrote outside its workspace")
	}
	events, err := ts.raw.GetRunEvents(context.Background(), run.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := readSSE(t, events.Body)
	events.Body.Close()
	if len(evs) != 1 || evs[0].Data.EventType != gen.TraceEventTypeRunFinished || evs[0].Data.ExitReason == nil || *evs[0].Data.ExitReason != gen.ExitReasonSetupFailed {
		t.Fatalf("the trace of a run whose setup failed: %+v", evs)
	}
	req = calcRequest()
	req.Setup = ptr("echo ready > setup.txt; echo fetched with " + secret)
	run = ts.wait(ts.create(req).Id)
	res = run.Result
	if res.ExitReason != gen.ExitReasonFinished || res.Setup == nil || !res.Setup.Passed || res.Setup.OutputTail == nil ||
		!strings.Contains(*res.Setup.OutputTail, "fetched with [REDACTED]") || strings.Contains(*res.Setup.OutputTail, secret) {
		t.Fatalf("a setup that passes: %+v (setup %+v)", res, res.Setup)
	}
	if data, err := os.ReadFile(filepath.Join(ts.cfg.WorkspaceRoot, "setup.txt")); err != nil || string(data) != "ready\n" {
		t.Fatalf("the setup's file in the workspace: %q, %v", data, err)
	} // Output longer than the tail kept, cut inside the secret: its end,
	// which the redactor does not know alone, is not in the tail either.
	req = calcRequest()
	req.Setup = ptr(`echo ` + secret + `; head -c 4085 /dev/zero | tr '\0' y; echo`)
	res = ts.wait(ts.create(req).Id).Result
	if res.Setup == nil || res.Setup.OutputTail == nil || strings.Contains(*res.Setup.OutputTail, secret[len(secret)-6:]) {
		t.Fatalf("a setup's long output keeps the end of a secret: %+v", res.Setup)
	}
}
