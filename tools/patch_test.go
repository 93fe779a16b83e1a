package tools_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Outside git, the patch is the file tools' edits, and it applies to the
// original tree.
func TestPatchOfFileTools(t *testing.T) {
	t.Parallel()
	needGit(t) // only to check that the patch applies
	original := map[string]string{"a.txt": "one\ntwo\nthree\n", "same.txt": "x\n", "keep.txt": "keep\n"}
	dir := t.TempDir()
	writeFiles(t, dir, original)
	rt := wsRuntime(t, dir)
	mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "a.txt", "old_text": "two", "new_text": "2"}))
	mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "a.txt", "old_text": "three", "new_text": "3"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "new/b.txt", "content": "bee\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "same.txt", "content": "changed\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "same.txt", "content": "x\n"})) // back to the original
	mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "echo by-command > cmd.txt"}))

	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+2\n+3\n" +
		"--- /dev/null\n+++ b/new/b.txt\n@@ -0,0 +1 @@\n+bee\n"
	if diff := cmp.Diff(want, patch); diff != "" {
		t.Fatalf("patch (-want +got):\n%s", diff)
	}
	// The patch turns the original tree into the edited one.
	check := t.TempDir()
	writeFiles(t, check, original)
	if err := os.WriteFile(filepath.Join(check, "run.patch"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, check, "apply", "run.patch")
	if got := readFile(t, filepath.Join(check, "a.txt")); got != readFile(t, filepath.Join(dir, "a.txt")) {
		t.Fatalf("applied a.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(check, "new/b.txt")); got != "bee\n" {
		t.Fatalf("applied new/b.txt = %q", got)
	}
}

// In a git work tree the patch is `git diff` of what the run changed: new
// files and changes made by commands included, changes made before the run
// excluded, and the repository's index left alone.
func TestPatchInGitRepository(t *testing.T) {
	t.Parallel()
	needGit(t)
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{
		".gitignore":        "*.log\n",
		"top.txt":           "top\n",
		"ws/a.txt":          "one\ntwo\n",
		"ws/pre.txt":        "pre\n",
		"ws/staged-new.txt": "staged\n",
	})
	git(t, repo, "init", "-q")
	git(t, repo, "add", ".gitignore", "top.txt", "ws/a.txt", "ws/pre.txt")
	git(t, repo, "commit", "-q", "-m", "init")
	git(t, repo, "add", "ws/staged-new.txt")
	// Changes from before the run.
	writeFiles(t, repo, map[string]string{"ws/pre.txt": "changed before the run\n", "ws/untracked-before.txt": "old\n"})
	indexBefore := readFile(t, filepath.Join(repo, ".git", "index"))
	statusBefore := git(t, repo, "status", "--porcelain")

	// The workspace is a subdirectory of the repository.
	ws := filepath.Join(repo, "ws")
	rt := wsRuntime(t, ws)
	mustSucceed(t, callTool(t, rt, "read_file", map[string]any{"path": "a.txt"}))
	if p, err := rt.Patch(context.Background()); err != nil || p != "" {
		t.Fatalf("reading changes nothing, yet the patch is %q (%v)", p, err)
	}
	mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "a.txt", "old_text": "two", "new_text": "2"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "new.txt", "content": "new\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "tool.log", "content": "ignored\n"}))
	// Before any command, the file tools' record is the base.
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "diff --git a/a.txt b/a.txt\nindex 814f4a4..99b356d 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n" +
		"diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..3e75765\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"; patch != want {
		t.Fatalf("the file tools' patch (-want +got):\n%s", cmp.Diff(want, patch))
	}
	mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "echo by-command > cmd.txt; echo noise > debug.log; echo up > ../top.txt; rm untracked-before.txt"}))

	patch, err = rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"diff --git a/a.txt b/a.txt", "-two\n+2\n",
		"diff --git a/new.txt b/new.txt", "new file mode", "+new\n",
		"diff --git a/cmd.txt b/cmd.txt", "+by-command\n",
		"diff --git a/untracked-before.txt b/untracked-before.txt", "deleted file mode",
	} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	for _, unwanted := range []string{"debug.log", "tool.log", "top.txt", "staged-new.txt", "pre.txt"} {
		if strings.Contains(patch, unwanted) {
			t.Errorf("patch has %s (ignored, outside the workspace, or changed before the run):\n%s", unwanted, patch)
		}
	}
	if readFile(t, filepath.Join(repo, ".git", "index")) != indexBefore {
		t.Fatal("computing the patch changed the repository's index")
	}
	statusAfter := git(t, repo, "status", "--porcelain")
	for _, line := range lines(statusBefore) {
		if !strings.Contains(statusAfter, line) && !strings.Contains(line, "untracked-before") {
			t.Fatalf("status line %q is gone:\n%s", line, statusAfter)
		}
	}
	if !strings.Contains(statusAfter, "?? ws/new.txt") {
		t.Fatalf("new.txt must stay untracked:\n%s", statusAfter)
	}
	check := t.TempDir()
	writeFiles(t, check, map[string]string{"a.txt": "one\ntwo\n", "untracked-before.txt": "old\n"})
	if err := os.WriteFile(filepath.Join(check, "run.patch"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, check, "apply", "run.patch")
	if got := readFile(t, filepath.Join(check, "cmd.txt")); got != "by-command\n" {
		t.Fatalf("applied cmd.txt = %q", got)
	}
}

func TestPatchWithoutChanges(t *testing.T) {
	t.Parallel()
	rt := wsRuntime(t, t.TempDir())
	if p, err := rt.Patch(context.Background()); err != nil || p != "" {
		t.Fatalf("patch %q, %v", p, err)
	}
}

// The snapshot before a command starts from the repository's index, and
// git's racy-entry rule still holds: a file changed after `git add` in the
// same second, its size and modification time put back, is read, so the
// change made before the run stays out of the patch and the run's own is
// in it, against the right content.
func TestPatchSeededIndexRacyEntry(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"r.txt": "aaaa\n", "other.txt": "other\n"})
	r := filepath.Join(ws, "r.txt")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(r, old, old); err != nil {
		t.Fatal(err)
	}
	git(t, ws, "init", "-q")
	git(t, ws, "add", ".")
	git(t, ws, "commit", "-q", "-m", "init")
	f, err := os.OpenFile(r, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("bbbb\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{r, filepath.Join(ws, ".git", "index")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	rt := wsRuntime(t, ws)
	mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "echo cccc > r.txt"}))
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, "-bbbb\n+cccc\n") || strings.Contains(patch, "other.txt") {
		t.Fatalf("patch:\n%s", patch)
	}
}
