package temporal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/temporal"
	"github.com/specloop/specloop/wiring"
)

// A run whose calls go to two workers in turn (the first one killed after
// its call, a fresh Activities value standing for the next) has the patch
// of the run on one worker: the second computes it against the baseline
// the first kept in the store, so the first call's change is in it.
func TestPatchOfARunThatMovedToAnotherWorker(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Parallel()
	store, err := temporal.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	calls := []gen.ToolCall{
		{Type: gen.ToolCallTypeToolCall, ToolName: "write_file", Arguments: map[string]any{"path": "a.txt", "content": "by the file tool\n"}},
		{Type: gen.ToolCallTypeToolCall, ToolName: "run_command", Arguments: map[string]any{"command": "echo by the command >> README && rm gone.txt"}},
	}
	// worker is a fresh worker on root; call runs call seq of run id on
	// it, patch the run's patch.
	type worker struct {
		env *testsuite.TestActivityEnvironment
	}
	newWorker := func(root string) worker {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		temporal.RegisterActivities(env, &temporal.Activities{Store: store, WorkspaceRoot: root, HostQueue: "h", Models: scriptModels,
			Setup: wiring.Config{Sandbox: sandbox.Policy{Backend: sandbox.None}}})
		return worker{env}
	}
	call := func(w worker, id string, seq int) {
		t.Helper()
		in := temporal.ToolInput{Seq: seq, Call: calls[seq]}
		in.Run = temporal.RunRef{RunID: id}
		v, err := w.env.ExecuteActivity(temporal.ToolActivity, in)
		if err != nil {
			t.Fatal(err)
		}
		var obs gen.Observation
		if err := v.Get(&obs); err != nil || obs.IsError {
			t.Fatalf("call %d: %+v %v", seq, obs, err)
		}
	}
	patch := func(w worker, id string) string {
		t.Helper()
		v, err := w.env.ExecuteActivity(temporal.PatchActivity, temporal.RunEvents{Run: temporal.RunRef{RunID: id}})
		if err != nil {
			t.Fatal(err)
		}
		var p string
		if err := v.Get(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	calmRoot := patchRepo(t)
	calm := newWorker(calmRoot)
	call(calm, "calm", 0)
	call(calm, "calm", 1)
	want := patch(calm, "calm")
	for _, part := range []string{"+by the file tool\n", "+by the command\n", "-gone\n"} {
		if !strings.Contains(want, part) {
			t.Fatalf("the run's patch has no %q:\n%s", part, want)
		}
	}
	if strings.Contains(want, "+changed before the run") || strings.Contains(want, "untracked.txt") {
		t.Fatalf("the run's patch holds the changes made before it:\n%s", want)
	}

	root := patchRepo(t)
	call(newWorker(root), "moved", 0)
	next := newWorker(root)
	call(next, "moved", 1)
	if got := patch(next, "moved"); got != want {
		t.Fatalf("the patch after the move:\n%s\nundisturbed:\n%s", got, want)
	}
	// A worker that only computes the patch has it too.
	if got := patch(newWorker(root), "moved"); got != want {
		t.Fatalf("the patch on a third worker:\n%s\nundisturbed:\n%s", got, want)
	}
}

// patchRepo is a workspace root that is a git repository with a commit
// and changes made before the run.
func patchRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README", "readme\n")
	write("gone.txt", "gone\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write("README", "readme\nchanged before the run\n")
	write("untracked.txt", "before the run\n")
	return dir
}
