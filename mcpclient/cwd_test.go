package mcpclient_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/specloop/specloop/mcpclient"
)

// A stdio server runs unsandboxed, so it must not start in the directory
// specloop runs in, which is often the workspace (run's default --workspace
// ., serve's default --workspace-root .): python -m, npx and the like load
// code from their working directory, so a file a model wrote there in one
// run would run outside the sandbox when the next run starts the server.
// A relative command is still found where it was given.
func TestStdioServerStartsOutsideTheWorkingDirectory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ws := t.TempDir()
	self := stdioCommand(t)
	exe := self[0]
	if err := os.Symlink(exe, filepath.Join(ws, "server")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	for _, cmd := range [][]string{self, {"./server", self[1]}} {
		rt := open(t, mcpclient.Server{Name: "ext", Command: cmd}, mcpclient.Config{})
		pid := strings.TrimSpace(call(t, rt, "ext__pid", nil).Content)
		cwd, err := os.Readlink("/proc/" + pid + "/cwd")
		if err != nil {
			t.Fatal(err)
		}
		if rel, err := filepath.Rel(ws, cwd); err == nil && !strings.HasPrefix(rel, "..") {
			t.Errorf("%v: the server runs in %s, inside the working directory %s", cmd, cwd, ws)
		}
	}
}
