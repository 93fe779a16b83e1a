package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// TestLocalAndServerRunsAreSetUpAlike: `specloop run` maps its flags, and
// the server its configuration and a run request, to one wiring.Config;
// equivalent input gives the same tools, sandbox, step budget and check,
// as run_started and the RunResult record them.
func TestLocalAndServerRunsAreSetUpAlike(t *testing.T) {
	sandboxFlags := []string{"--sandbox", "none", "--allow-network", "--allow-git-writes"}
	runFlags := []string{"--script", "testdata/calculator.script", "--check", "true", "--max-steps", "4", "--token-budget", "100000", "--json"}

	localTrace := filepath.Join(t.TempDir(), "local.jsonl")
	args := append([]string{"run", "--workspace", t.TempDir(), "--trace", localTrace}, sandboxFlags...)
	code, stdout, stderr := specloop(t, append(append(args, runFlags...), prompt)...)
	if code != exitOK {
		t.Fatalf("local: exit %d: %s\n%s", code, stderr, stdout)
	}
	local := decodeResult(t, stdout)

	url, _ := startServe(t, append([]string{"--allow-commands"}, sandboxFlags...)...)
	remoteTrace := filepath.Join(t.TempDir(), "remote.jsonl")
	args = []string{"run", "--remote", url, "--trace", remoteTrace}
	code, stdout, stderr = specloop(t, append(append(args, runFlags...), prompt)...)
	if code != exitOK {
		t.Fatalf("remote: exit %d: %s\n%s", code, stderr, stdout)
	}
	remote := decodeResult(t, stdout)

	want := &gen.SandboxInfo{Backend: gen.SandboxInfoBackendNone, Network: true, GitWrites: true}
	if local.Sandbox == nil || *local.Sandbox != *want {
		t.Errorf("local sandbox %+v, want %+v", local.Sandbox, want)
	}
	if !reflect.DeepEqual(local.Sandbox, remote.Sandbox) {
		t.Errorf("sandbox: local %+v, remote %+v", local.Sandbox, remote.Sandbox)
	}
	if local.Check == nil || remote.Check == nil || !reflect.DeepEqual(*local.Check, *remote.Check) {
		t.Errorf("check: local %+v, remote %+v", local.Check, remote.Check)
	}
	if local.ExitReason != remote.ExitReason || local.StepsUsed != remote.StepsUsed {
		t.Errorf("result: local %s after %d, remote %s after %d", local.ExitReason, local.StepsUsed, remote.ExitReason, remote.StepsUsed)
	}

	ls, rs := runStarted(t, localTrace), runStarted(t, remoteTrace)
	if ls.MaxSteps == nil || *ls.MaxSteps != 4 || rs.MaxSteps == nil || *rs.MaxSteps != 4 {
		t.Errorf("max steps: local %v, remote %v", ls.MaxSteps, rs.MaxSteps)
	}
	if ls.ToolNames == nil || rs.ToolNames == nil || !reflect.DeepEqual(*ls.ToolNames, *rs.ToolNames) {
		t.Errorf("tools: local %v, remote %v", ls.ToolNames, rs.ToolNames)
	}
	if !reflect.DeepEqual(ls.Sandbox, rs.Sandbox) || !reflect.DeepEqual(ls.Sandbox, local.Sandbox) {
		t.Errorf("run_started sandbox: local %+v, remote %+v", ls.Sandbox, rs.Sandbox)
	}
}

func decodeResult(t *testing.T, stdout string) gen.RunResult {
	t.Helper()
	var res gen.RunResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("result: %v: %s", err, stdout)
	}
	return res
}

func runStarted(t *testing.T, path string) gen.TraceEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := trace.Read(f)
	if err != nil || len(log.Events) == 0 || log.Events[0].EventType != gen.TraceEventTypeRunStarted {
		t.Fatalf("%s: %v %+v", path, err, log)
	}
	return log.Events[0]
}
