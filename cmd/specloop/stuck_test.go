package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run that repeats itself shows the warning, ends stuck, and exits with
// the status of stuck.
func TestRunStuck(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "stuck.script")
	call := `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}` + "\n"
	if err := os.WriteFile(script, []byte(strings.Repeat(call, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := specloop(t, "run", "--script", script, "--max-steps", "10", "--workspace", dir, "--no-commands", "divide")
	if code != exitStuck {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitStuck, stdout, stderr)
	}
	out := stdout + stderr
	if !strings.Contains(out, "step 3   ✗ stuck warning: You are going in circles: the same call failed with the same error 3 times in a row") || !strings.Contains(out, "result: stuck after 4 steps") {
		t.Fatalf("output:\n%s", out)
	}
}
