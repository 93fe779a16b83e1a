package runner_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
)

// A server's run reads the AGENTS.md of the server's user and of its own
// workspace, never one above the workspace: a repository around the
// server's workspace root is not the run's to read. run_started lists the
// files; project_docs false reads none.
func TestServerRunsReadOnlyTheirWorkspacesDocs(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	parent := t.TempDir()
	root := filepath.Join(parent, "workspaces")
	for path, text := range map[string]string{
		filepath.Join(config, "specloop", "AGENTS.md"): "the server user's rules\n",
		filepath.Join(parent, ".git", "HEAD"):          "ref: refs/heads/main\n",
		filepath.Join(parent, "AGENTS.md"):             "not the run's to read\n",
		filepath.Join(root, "proj", "AGENTS.md"):       "the project's rules\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rn := newRunner(t, t.TempDir(), root)
	started := func(req gen.CreateRunRequest) string {
		t.Helper()
		ws := "proj"
		req.Workspace = &ws
		v, err := rn.Create(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, rn, v.Id, finished)
		evs, err := rn.Events(context.Background(), v.Id, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer evs.Close()
		body, err := io.ReadAll(evs)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if strings.Contains(line, `"run_started"`) {
				return line
			}
		}
		t.Fatalf("no run_started in %s", body)
		return ""
	}
	line := started(script(t, `{"type":"finish","answer":"done"}`))
	user := filepath.Join(config, "specloop", "AGENTS.md")
	if !strings.Contains(line, `"project_docs":[{"path":"`+user+`","sha256":"`) || !strings.Contains(line, `{"path":"AGENTS.md","sha256":"`) {
		t.Errorf("run_started lacks the user's or the workspace's AGENTS.md: %s", line)
	}
	if strings.Count(line, `"path":`) != 2 || strings.Contains(line, "rules") {
		t.Errorf("run_started lists another file or holds a file's text: %s", line)
	}
	off := script(t, `{"type":"finish","answer":"done"}`)
	off.ProjectDocs = new(bool)
	if line := started(off); strings.Contains(line, "project_docs") {
		t.Errorf("project_docs false read files: %s", line)
	}
}
