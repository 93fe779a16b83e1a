package tools_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzFileToolPaths: whatever path a model sends, no file tool panics,
// reads, lists or writes anything outside the workspace.
func FuzzFileToolPaths(f *testing.F) {
	for _, seed := range []string{
		"ok.txt", ".", "..", "../outside/secret.txt", "/etc/passwd", "link-file", "abs-link-file",
		"link-dir/inner.txt", "sub/up/secret.txt", "sub/../../outside/secret.txt", "ok.txt\x00x", "fifo", "loop",
		"sub//./keep.txt", "sub/up/../../outside", "./../ws/../outside/secret.txt", "\\..\\outside",
	} {
		f.Add(seed)
	}
	base, ws, outside := escapeFixture(f)
	rt := wsRuntime(f, ws)
	outsideBefore := snapshot(f, outside)
	f.Fuzz(func(t *testing.T, path string) {
		calls := []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": path}},
			{"list_files", map[string]any{"path": path}},
			{"search", map[string]any{"pattern": "TOP-SECRET", "path": path}},
			{"edit_file", map[string]any{"path": path, "old_text": "TOP", "new_text": "fuzz"}},
			{"write_file", map[string]any{"path": path, "content": "fuzz\n"}},
		}
		for _, c := range calls {
			obs := callTool(t, rt, c.tool, c.args)
			if strings.Contains(obs.Content, outsideSecret) || strings.Contains(mustJSON(t, obs.Data), outsideSecret) {
				t.Fatalf("%s %q: outside content leaked", c.tool, path)
			}
		}
		if diff := cmp.Diff(outsideBefore, snapshot(t, outside)); diff != "" {
			t.Fatalf("path %q changed the outside (-before +after):\n%s", path, diff)
		}
		if entries := snapshot(t, base); len(entries) > 0 {
			for p := range entries {
				if p != "." && !strings.HasPrefix(p, "ws") && !strings.HasPrefix(p, "outside") {
					t.Fatalf("path %q created %s next to the workspace", path, filepath.Join(base, p))
				}
			}
		}
	})
}
