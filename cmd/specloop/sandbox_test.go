package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/trace"
)

// The demo passes under every sandbox available here (its check is
// `go test`, which needs GOROOT, GOMODCACHE and GOCACHE inside the
// sandbox), and the RunResult and run_started record the sandbox. The
// run without one is also the demo with --keep --json: it says on
// standard error (its standard output is the RunResult alone) what it
// kept, the workspace and the trace.
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
			args := []string{"demo", "--json", "--sandbox", string(b), "--trace", tracePath}
			if b == sandbox.None {
				args = []string{"demo", "--json", "--sandbox", string(b), "--keep"}
			}
			code, stdout, stderr := specloop(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if b == sandbox.None {
				kept := regexp.MustCompile(`(?m)^kept:   (\S+) \(the workspace roman/ and the trace trace.jsonl; remove it when done\)$`).FindStringSubmatch(stderr)
				if kept == nil {
					t.Fatalf("--keep --json does not say what it kept:\n%s", stderr)
				}
				t.Cleanup(func() { os.RemoveAll(kept[1]) })
				for _, f := range []string{"roman/roman.go", "trace.jsonl"} {
					if _, err := os.Stat(filepath.Join(kept[1], f)); err != nil {
						t.Errorf("kept: %v", err)
					}
				}
				tracePath = filepath.Join(kept[1], "trace.jsonl")
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
