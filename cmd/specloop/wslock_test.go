package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/wiring"
)

// editScript is a run that edits its own lines of f.txt one by one,
// names a..t prefixed with who, then finishes.
func editScript(t *testing.T, who string) string {
	t.Helper()
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, `{"type":"tool_call","tool_name":"edit_file","arguments":{"path":"f.txt","old_text":"%s%d=old\n","new_text":"%s%d=new\n"}}`+"\n", who, i, who, i)
	}
	b.WriteString(`{"type":"finish","answer":"edited"}` + "\n")
	path := filepath.Join(t.TempDir(), who+".script")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Two `specloop run` processes editing different lines of one file at
// once lose no edit: every run holds its workspace against the other
// processes (wiring.Config.LockDir), so the second waits for the first.
func TestTwoProcessesLoseNoEdit(t *testing.T) {
	t.Parallel()
	rounds := 25
	if testing.Short() {
		rounds = 5
	}
	scripts := map[string]string{"a": editScript(t, "a"), "b": editScript(t, "b")}
	for round := range rounds {
		ws := t.TempDir()
		var orig strings.Builder
		for i := range 20 {
			fmt.Fprintf(&orig, "a%d=old\nb%d=old\n", i, i)
		}
		if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte(orig.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		outs := make(map[string][]byte)
		var mu sync.Mutex
		for who, script := range scripts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "run", "--script", script, "--no-commands", "--max-steps", "30", "--workspace", ws, "--json", "edit your lines")
				cmd.Env = append(os.Environ(), selfServerEnv+"=1")
				out, err := cmd.CombinedOutput()
				mu.Lock()
				outs[who] = out
				mu.Unlock()
				if err != nil {
					t.Errorf("round %d: run %s: %v\n%s", round, who, err, out)
				}
			}()
		}
		wg.Wait()
		got, err := os.ReadFile(filepath.Join(ws, "f.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(got), "=new"); n != 40 {
			t.Fatalf("round %d: %d of 40 edits in the file:\n%s\nrun a:\n%s\nrun b:\n%s", round, n, got, outs["a"], outs["b"])
		}
	}
}

// With --no-wait a run on a workspace another process holds fails at
// once, saying who holds it.
func TestNoWaitFailsOnABusyWorkspace(t *testing.T) {
	ws := t.TempDir()
	locks, err := cli.StateDir("locks")
	if err != nil {
		t.Fatal(err)
	}
	hold := exec.Command(os.Args[0], "-test.run=^TestHoldWorkspaceHelper$")
	hold.Env = append(os.Environ(), "SPECLOOP_TEST_HOLD="+ws, "SPECLOOP_TEST_LOCKS="+locks)
	stdin, err := hold.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer hold.Wait()
	defer stdin.Close()
	buf := make([]byte, 7)
	if _, err := stdout.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("the holder did not take the lock: %q, %v", buf, err)
	}
	code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--no-commands", "--no-wait", "--workspace", ws, "p")
	if code != exitInternal || !strings.Contains(stderr, "another specloop run uses this workspace") || !strings.Contains(stderr, "pid ") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestHoldWorkspaceHelper is the other process of
// TestNoWaitFailsOnABusyWorkspace: with SPECLOOP_TEST_HOLD set it holds
// that workspace as a run does, says so, and lets go when its standard
// input closes.
func TestHoldWorkspaceHelper(t *testing.T) {
	ws := os.Getenv("SPECLOOP_TEST_HOLD")
	if ws == "" {
		t.Skip("the helper process of TestNoWaitFailsOnABusyWorkspace")
	}
	s, err := wiring.Open(wiring.Config{Dir: ws, DisableCommands: true, LockDir: os.Getenv("SPECLOOP_TEST_LOCKS")})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	_, _ = io.ReadAll(os.Stdin)
	s.Close()
}
