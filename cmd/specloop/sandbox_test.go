package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/trace"
)

// The demo passes under every sandbox available here (its check is
// `go test`, which needs GOROOT, GOMODCACHE and GOCACHE inside the
// sandbox), and the RunResult and run_started record the sandbox.
func TestDemoUnderEachSandbox(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap, sandbox.None} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel() // each demo has its own workspace; most of its time is its check's go test
			if err := sandbox.Available(b); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("backend %s must be available on CI: %v", b, err)
				}
				t.Skipf("backend %s: %v", b, err)
			}
			tracePath := filepath.Join(t.TempDir(), "demo.jsonl")
			code, stdout, stderr := specloop(t, "demo", "--json", "--sandbox", string(b), "--trace", tracePath)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var res gen.RunResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatal(err)
			}
			// Confined: no network, no .git writes; unconfined: both.
			confined := b != sandbox.None
			if res.Sandbox == nil || string(res.Sandbox.Backend) != string(b) || res.Sandbox.Network == confined || res.Sandbox.GitWrites == confined ||
				(b == sandbox.Landlock) != (res.Sandbox.LandlockAbi > 0) {
				t.Fatalf("result sandbox %+v", res.Sandbox)
			}
			if (b == sandbox.None) != strings.Contains(stderr, "unconfined") {
				t.Fatalf("the warning for none: %q", stderr)
			}
			f, err := os.Open(tracePath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			log, err := trace.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			first := log.Events[0]
			if first.EventType != gen.TraceEventTypeRunStarted || first.Sandbox == nil || *first.Sandbox != *res.Sandbox {
				t.Fatalf("run_started %+v", first)
			}
		})
	}
}

func TestSandboxFlags(t *testing.T) {
	code, _, stderr := specloop(t, "demo", "--sandbox", "chroot")
	if code != exitUsage || !strings.Contains(stderr, "unknown sandbox") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, _, stderr = specloop(t, "sandbox-exec", "{}")
	if code != exitUsage || !strings.Contains(stderr, "internal") {
		t.Fatalf("sandbox-exec by hand: exit %d: %s", code, stderr)
	}
}
