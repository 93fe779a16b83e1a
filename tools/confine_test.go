package tools_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const outsideSecret = "TOP-SECRET-OUTSIDE-CONTENT"

// escapeFixture builds base/ws (the workspace) next to base/outside, with
// symbolic links from the workspace to outside and a FIFO inside.
func escapeFixture(t testing.TB) (base, ws, outside string) {
	t.Helper()
	base = t.TempDir()
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	writeFiles(t, outside, map[string]string{"secret.txt": outsideSecret + "\n", "dir/inner.txt": outsideSecret + "\n"})
	writeFiles(t, ws, map[string]string{"ok.txt": "fine\n", "sub/keep.txt": "keep\n"})
	links := map[string]string{
		"link-file":     "../outside/secret.txt",              // relative, to an outside file
		"abs-link-file": filepath.Join(outside, "secret.txt"), // absolute, to an outside file
		"link-dir":      filepath.Join(outside, "dir"),        // to an outside directory
		"sub/up":        "../../outside",                      // a symlinked parent, one level down
		"loop":          "loop",                               // a symlink loop
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return base, ws, outside
}

// Every file tool refuses every way out of the workspace, and nothing
// outside is read, listed or written.
func TestEscapeAttempts(t *testing.T) {
	t.Parallel()
	base, ws, outside := escapeFixture(t)
	rt := wsRuntime(t, ws)
	before := snapshot(t, base)

	attempts := []struct {
		name, path string
		codes      []string // acceptable error codes
	}{
		{"parent", "../outside/secret.txt", []string{"outside_workspace"}},
		{"parent only", "..", []string{"outside_workspace"}},
		{"down then up and out", "sub/../../outside/secret.txt", []string{"outside_workspace"}},
		{"absolute system file", "/etc/passwd", []string{"outside_workspace"}},
		{"absolute outside file", filepath.Join(outside, "secret.txt"), []string{"outside_workspace"}},
		{"symlink to an outside file", "link-file", []string{"outside_workspace"}},
		{"absolute symlink to an outside file", "abs-link-file", []string{"outside_workspace"}},
		{"symlink to an outside directory", "link-dir", []string{"outside_workspace"}},
		{"through a symlinked directory", "link-dir/inner.txt", []string{"outside_workspace"}},
		{"through a symlinked parent", "sub/up/secret.txt", []string{"outside_workspace"}},
		{"new file through a symlinked parent", "sub/up/new.txt", []string{"outside_workspace"}},
		{"new directory through a symlinked parent", "link-dir/newdir/new.txt", []string{"outside_workspace"}},
		{"NUL byte", "ok.txt\x00../../outside/secret.txt", []string{"outside_workspace"}},
		{"symlink loop", "loop", []string{"outside_workspace", "not_a_regular_file"}},
		{"FIFO", "fifo", []string{"not_a_regular_file", "not_a_directory"}},
	}
	tools := []struct {
		name string
		args func(path string) map[string]any
		// dirTool tools take directories; searching a FIFO is no error, it
		// just has nothing to match.
		noMatchOK bool
		notDir    bool
	}{
		{name: "read_file", args: func(p string) map[string]any { return map[string]any{"path": p} }},
		{name: "edit_file", args: func(p string) map[string]any {
			return map[string]any{"path": p, "old_text": "TOP", "new_text": "pwned"}
		}},
		{name: "write_file", args: func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned\n"} }},
		{name: "list_files", notDir: true, args: func(p string) map[string]any { return map[string]any{"path": p} }},
		{name: "search", noMatchOK: true, args: func(p string) map[string]any {
			return map[string]any{"pattern": "TOP-SECRET", "path": p}
		}},
	}
	for _, tool := range tools {
		for _, a := range attempts {
			t.Run(tool.name+"/"+a.name, func(t *testing.T) {
				obs := callTool(t, rt, tool.name, tool.args(a.path))
				if strings.Contains(obs.Content, outsideSecret) || strings.Contains(mustJSON(t, obs.Data), outsideSecret) {
					t.Fatalf("outside content leaked: %s", obs.Content)
				}
				if !obs.IsError {
					if tool.noMatchOK && a.name == "FIFO" && strings.HasPrefix(obs.Content, "no matches") {
						return
					}
					t.Fatalf("not refused: %s", obs.Content)
				}
				if !slices.Contains(a.codes, code(obs)) {
					t.Fatalf("code %q (%s), want one of %v", code(obs), obs.Content, a.codes)
				}
			})
		}
	}

	// Whole-workspace walks do not follow links out nor block on the FIFO.
	obs := mustSucceed(t, callTool(t, rt, "search", map[string]any{"pattern": "TOP-SECRET"}))
	if !strings.HasPrefix(obs.Content, "no matches") {
		t.Fatalf("a workspace-wide search found outside content: %s", obs.Content)
	}
	obs = mustSucceed(t, callTool(t, rt, "list_files", map[string]any{}))
	if diff := cmp.Diff([]any{"ok.txt", "sub/keep.txt"}, data(obs)["files"]); diff != "" {
		t.Fatalf("list_files (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff(before, snapshot(t, base)); diff != "" {
		t.Fatalf("the attempts changed the file system (-before +after):\n%s", diff)
	}
}
