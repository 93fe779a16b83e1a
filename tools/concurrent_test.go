package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The write tools check a path (no .git on it, through symbolic links)
// and then write it, trusting that no command runs in between. Calls of
// one runtime may run at once (/mcp and /v1/tools serve them
// concurrently), so a command must not run while a write tool does: here
// one waits for the first file of a patch and then turns sub into a
// symbolic link to .git, before the patch's last file, sub/hooks/..., is
// written.
func TestCommandCannotSwapAPathDuringAWrite(t *testing.T) {
	t.Parallel()
	t.Run("one runtime", func(t *testing.T) { t.Parallel(); commandSwapsDuringWrite(t, false) })
	// The server opens a workspace per /v1/tools call, next to a run's and
	// /mcp's on the same directory: they must order their calls too.
	t.Run("two runtimes on one directory", func(t *testing.T) { t.Parallel(); commandSwapsDuringWrite(t, true) })
}

func commandSwapsDuringWrite(t *testing.T, twoRuntimes bool) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{".git/hooks/README": "hooks\n", "sub/hooks/keep": "x\n"})
	rt, writer := wsRuntime(t, dir), wsRuntime(t, dir)
	if !twoRuntimes {
		writer = rt
	}
	var patch strings.Builder
	patch.WriteString("*** Begin Patch\n*** Add File: trigger\n+go\n")
	// Files written between the trigger and the hook widen the window.
	line := "+" + strings.Repeat("x", 1000) + "\n"
	for i := range 40 {
		fmt.Fprintf(&patch, "*** Add File: pad/%d.txt\n%s", i, strings.Repeat(line, 50))
	}
	patch.WriteString("*** Add File: sub/hooks/post-checkout\n+#!/bin/sh\n+echo pwned\n*** End Patch\n")
	started := filepath.Join(dir, "started")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Ordered, the command waits for its timeout (the shortest the
		// spec allows) before the patch writes anything.
		callTool(t, rt, "run_command", map[string]any{"timeout_seconds": 1,
			"command": "touch started; while [ ! -e trigger ]; do sleep 0.001; done; rm -r sub && ln -s .git sub"})
	}()
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mustSucceed(t, callTool(t, writer, "apply_patch", map[string]any{"patch": patch.String()}))
	wg.Wait()
	if data, err := os.ReadFile(filepath.Join(dir, ".git", "hooks", "post-checkout")); err == nil {
		t.Fatalf("a write tool wrote into .git through a link a concurrent command made: %q", data)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "sub", "hooks", "post-checkout")); err != nil {
		t.Fatalf("the patch's hook file is not where the patch put it: %v", err)
	}
}
