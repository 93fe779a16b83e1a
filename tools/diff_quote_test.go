package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hostileNames are file names a unified diff must quote (or, with a space,
// end with a tab) to carry them whole.
var hostileNames = []string{
	"x\n+++ b/injected.sh",
	"y\n--- a/injected.sh\n+++ b/injected.sh",
	"tab\there",
	`quote"d`,
	`back\slash`,
	"sp ace.txt",
	"del\x7f",
	"bell\a",
	"esc\x1b[31m",
	"ünï.txt",
	"plain.txt",
}

// The fallback diff (file tools outside git) writes each name as git does,
// so applying it with git apply or patch -p1 changes exactly those files
// and a name can never add a header line (no injected.sh).
func TestFileDiffQuotesNamesAsGit(t *testing.T) {
	t.Parallel()
	var patch strings.Builder
	for _, name := range hostileNames {
		patch.WriteString(fileDiff(name, []byte("old\n"), true, []byte("new\n"), true))
	}
	changed := patch.String()
	patch.WriteString(fileDiff("new\nfile", nil, false, []byte("created\n"), true))

	if _, err := exec.LookPath("git"); err == nil {
		// The same change made by git: the header lines must be the same.
		repo := t.TempDir()
		writeNames(t, repo, "old\n")
		runIn(t, repo, "git", "init", "-q")
		runIn(t, repo, "git", "add", ".")
		runIn(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
		writeNames(t, repo, "new\n")
		gitPatch := runIn(t, repo, "git", "-c", "core.quotePath=false", "diff", "--no-ext-diff", "--no-textconv")
		if diff := cmp.Diff(headers(gitPatch), headers(changed)); diff != "" {
			t.Errorf("header lines differ from git's (-git +ours):\n%s", diff)
		}
	}
	for _, tool := range [][]string{{"git", "apply"}, {"patch", "-p1", "--batch", "-i"}} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			t.Logf("%s is not installed", tool[0])
			continue
		}
		dir := t.TempDir()
		writeNames(t, dir, "old\n")
		pf := filepath.Join(t.TempDir(), "run.patch")
		if err := os.WriteFile(pf, []byte(patch.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		out := runIn(t, dir, tool[0], append(tool[1:], pf)...)
		if _, err := os.Lstat(filepath.Join(dir, "injected.sh")); err == nil {
			t.Errorf("%s created injected.sh:\n%s", tool[0], out)
		}
		for _, name := range append(slices.Clone(hostileNames), "new\nfile") {
			want := "new\n"
			if name == "new\nfile" {
				want = "created\n"
			}
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
				t.Errorf("%s: %q is %q (%v), want %q", tool[0], name, got, err, want)
			}
		}
		var files int
		filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
			if d != nil && d.Type().IsRegular() {
				files++
			}
			return nil
		})
		if files != len(hostileNames)+1 {
			t.Errorf("%s left %d files, want %d", tool[0], files, len(hostileNames)+1)
		}
	}
}

// The edit_file diff names the file the same way.
func TestEditDiffQuotesNames(t *testing.T) {
	t.Parallel()
	d, err := editDiff("x\n+++ b/injected.sh", []byte("old\n"), 0, 3, []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	// A tab ends a name with a space, as in git's headers.
	want := "--- \"a/x\\n+++ b/injected.sh\"\t\n+++ \"b/x\\n+++ b/injected.sh\"\t\n@@ -1 +1 @@\n-old\n+new\n"
	if d != want {
		t.Fatalf("editDiff = %q, want %q", d, want)
	}
}

func writeNames(t *testing.T, dir, content string) {
	t.Helper()
	for _, name := range hostileNames {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runIn(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// headers returns the ---/+++ lines of a patch, sorted.
func headers(patch string) []string {
	var hs []string
	for l := range strings.SplitSeq(patch, "\n") {
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
			hs = append(hs, l)
		}
	}
	slices.Sort(hs)
	return hs
}
