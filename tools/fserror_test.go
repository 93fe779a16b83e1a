package tools_test

import (
	"strings"
	"testing"
)

// TestPathTooLong: a path component longer than the file system allows is
// the spec's invalid_path, for every file tool, and nothing is written.
func TestPathTooLong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := wsRuntime(t, dir)
	long := strings.Repeat("x", 300)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": long}},
		{"write_file", map[string]any{"path": long, "content": "x"}},
		{"edit_file", map[string]any{"path": long, "old_text": "a", "new_text": "b"}},
		{"list_files", map[string]any{"path": long}},
		{"search", map[string]any{"pattern": "a", "path": long}},
	}
	for _, c := range calls {
		t.Run(c.tool, func(t *testing.T) {
			obs := callTool(t, rt, c.tool, c.args)
			if got := code(obs); got != "invalid_path" {
				t.Fatalf("code %q (%s), want invalid_path", got, obs.Content)
			}
		})
	}
	if got := snapshot(t, dir); len(got) != 1 { // only "." itself
		t.Fatalf("the workspace changed: %v", got)
	}
}
