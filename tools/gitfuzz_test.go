package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzWriteToolsSpareGit: whatever path a model sends, write_file and
// edit_file never change anything inside a git directory, and never create
// a file whose name has a control character.
func FuzzWriteToolsSpareGit(f *testing.F) {
	for _, seed := range []string{
		".git/config", ".GIT/config", "sub/.git/hooks/pre-commit", "meta/config", "meta/../.git/config",
		"bare/config", "bare/hooks/x", "link-bare/config", ".git", ".git./config", ".g\u200cit/config",
		"x\n+++ b/y", "ok.txt", "sub/ok.txt",
	} {
		f.Add(seed)
	}
	ws := f.TempDir()
	writeFiles(f, ws, map[string]string{
		".git/config": "[core]\n", "sub/.git/config": "[core]\n", "ok.txt": "ok\n",
		"bare/HEAD": "ref: refs/heads/main\n", "bare/config": "[core]\n", "bare/objects/x": "", "bare/refs/heads/main": "0\n",
	})
	for link, target := range map[string]string{"meta": ".git", "link-bare": "bare", "sub/meta": "../.git"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			f.Fatal(err)
		}
	}
	rt := wsRuntimeNoCommands(f, ws)
	gitDirs := []string{".git", "sub/.git", "bare"}
	before := map[string]map[string]string{}
	for _, d := range gitDirs {
		before[d] = snapshot(f, filepath.Join(ws, d))
	}
	f.Fuzz(func(t *testing.T, path string) {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"write_file", map[string]any{"path": path, "content": "[core]\n\tfsmonitor = /bin/true\n"}},
			{"edit_file", map[string]any{"path": path, "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = /bin/true"}},
		} {
			callTool(t, rt, c.tool, c.args)
		}
		for _, d := range gitDirs {
			if diff := cmp.Diff(before[d], snapshot(t, filepath.Join(ws, d))); diff != "" {
				t.Fatalf("path %q changed %s:\n%s", path, d, diff)
			}
		}
		for p := range snapshot(t, ws) {
			if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("path %q created %q", path, p)
			}
		}
	})
}
