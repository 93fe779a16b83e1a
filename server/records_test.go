package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/wiring"
)

// TestRecordsOutsideWorkspaceRoot: a run works in the workspace root and
// may read and write every file there, so a data directory inside it lets
// one run read every run's answers and patches and forge the run log
// (after a restart the server would serve the forged answer). New refuses
// such a data directory, and a workspace root inside the data directory,
// symbolic links resolved. Before the fix New accepted both, and the
// forged answer was served.
func TestRecordsOutsideWorkspaceRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	inside := filepath.Join(root, "specloop-data")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, data, root string }{
		{"data inside the root", inside, root},
		{"data is the root", root, root},
		{"data inside the root through a link", filepath.Join(link, "data"), root},
		{"root inside data", filepath.Dir(root), root},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := server.New(server.Config{Token: testToken, Config: runner.Config{DataDir: tc.data, WorkspaceRoot: tc.root}})
			if err == nil {
				forged := forgeRunLog(t, srv, tc.data, tc.root)
				t.Fatalf("New accepted data directory %s in workspace root %s (a run forged the answer: %v)", tc.data, tc.root, forged)
			}
			if !errors.Is(err, wiring.ErrRecordsInWorkspace) {
				t.Fatalf("New: %v, want ErrRecordsInWorkspace", err)
			}
		})
	}
	if _, err := os.Stat(inside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused data directory was created: %v", err)
	}
	// Beside each other is fine.
	base := t.TempDir()
	ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: filepath.Join(base, "data"), WorkspaceRoot: mkdir(t, filepath.Join(base, "data-root"))}})
	ts.wait(ts.create(calcRequest()).Id)
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// forgeRunLog is the attack on a server that accepted a data directory in
// its workspace root: run A finishes, run B (naming no workspace) rewrites
// A's answer in the run log, and after a restart the server serves the
// forged answer. It reports whether it did.
func forgeRunLog(t *testing.T, srv *server.Server, data, root string) bool {
	t.Helper()
	hs := serveHTTP(srv)
	defer hs.Close()
	c, err := sdk.New(hs.URL, sdk.Config{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runA := func(req gen.CreateRunRequest) gen.Run {
		r, err := c.CreateRun(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		done, err := c.Wait(ctx, r.Id)
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	a := runA(calcRequest())
	real, err := filepath.EvalSymlinks(data)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, filepath.Join(real, "runs.jsonl"))
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	edit, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "edit_file",
		"arguments": map[string]string{"path": filepath.ToSlash(rel), "old_text": "12 * 7 = 84", "new_text": "FORGED"}})
	runA(gen.CreateRunRequest{Task: gen.Task{Prompt: "edit"}, Model: sdk.Script(string(edit), `{"type":"finish","answer":"done"}`)})
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := server.New(server.Config{Token: testToken, Config: runner.Config{DataDir: data, WorkspaceRoot: root}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Shutdown(ctx)
	hs2 := serveHTTP(again)
	defer hs2.Close()
	c2, _ := sdk.New(hs2.URL, sdk.Config{Token: testToken})
	got, err := c2.GetRun(ctx, a.Id)
	if err != nil {
		t.Fatal(err)
	}
	return got.Result != nil && got.Result.Answer != nil && strings.HasPrefix(*got.Result.Answer, "FORGED")
}
