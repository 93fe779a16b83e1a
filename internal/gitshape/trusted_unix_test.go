//go:build unix

package gitshape

import (
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A FIFO at the hooks path (a command can make one) is read without
// blocking: finding the trusted paths returns, and still names it.
func TestInWorkspaceFIFOHooks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	git(t, ws, "init", "-q")
	git(t, ws, "config", "core.hooksPath", ".githooks")
	if err := syscall.Mkfifo(filepath.Join(ws, ".githooks"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []string, 1)
	go func() { got <- rels(InWorkspace(ws, Enclosing(ws), nil)) }()
	select {
	case g := <-got:
		if !slices.Equal(g, []string{"dir .githooks core.hooksPath .git/config"}) {
			t.Errorf("got %q", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("finding the trusted paths hangs on a FIFO")
	}
}
