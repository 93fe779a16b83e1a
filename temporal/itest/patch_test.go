package itest

import (
	"os"
	"os/exec"
	"path/filepath"
)

// gitWorkspace makes workspace ws a git repository with a commit, and
// changes made before the run (a tracked file changed, an untracked file),
// which no patch of the run holds.
func (c *cluster) gitWorkspace(ws string) {
	c.t.Helper()
	dir := filepath.Join(c.dir, "ws", ws)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	files := map[string]string{"README": "readme\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "before the run"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			c.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for name, content := range map[string]string{"README": "readme\nchanged before the run\n", "untracked.txt": "before the run\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
}

// checkScriptPatch fails unless patch is the script's: log.txt created
// with both of its appends, and nothing of what was there before the run.
func (c *cluster) checkScriptPatch(patch any) {
	c.t.Helper()
	const want = "diff --git a/log.txt b/log.txt\nnew file mode 100644\nindex 0000000..814f4a4\n--- /dev/null\n+++ b/log.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
	if p, _ := patch.(string); p != want {
		c.t.Fatalf("the run's patch is %q, want %q", patch, want)
	}
}
