package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/internal/gittest"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
)

// gitStatusRuns reports whether `git status` in dir, run as a person
// would, ran the command the attack planted (it touches marker); git
// looks no higher than dir's parent.
func gitStatusRuns(t *testing.T, dir, marker string) bool {
	t.Helper()
	return gittest.Ran(t, dir, marker, []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}, []string{"status"})
}

// bareShape is the four files that make sub a git directory whose
// configuration runs a command: git takes a directory that is a git
// directory for its repository before it looks for a .git above it.
func bareShape(marker string) map[string]string {
	return map[string]string{
		"sub/config":        "[core]\n\trepositoryformatversion = 0\n\tworktree = .\n\tfsmonitor = \"touch " + marker + "\"\n",
		"sub/HEAD":          "ref: refs/heads/main\n",
		"sub/objects/.keep": "",
		"sub/refs/.keep":    "",
	}
}

// permutations returns every order of s.
func permutations(s []string) [][]string {
	if len(s) <= 1 {
		return [][]string{append([]string{}, s...)}
	}
	var out [][]string
	for i := range s {
		rest := append(append([]string{}, s[:i]...), s[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{s[i]}, p...))
		}
	}
	return out
}

// TestWriteToolsBuildNoGitDirectory: however the file tools are called
// (one file at a time in any order, or one patch), they never leave a
// directory that git takes for a repository, so the person's next git
// command there runs nothing the model wrote. It failed before the write
// rules judged the state a write leaves: each write alone passed.
func TestWriteToolsBuildNoGitDirectory(t *testing.T) {
	t.Parallel()
	needGit(t)
	// The control: the same files written directly make git run the
	// command, so the probe would catch a write rule that lets them in.
	t.Run("control", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		writeFiles(t, ws, bareShape(marker))
		if !gitStatusRuns(t, filepath.Join(ws, "sub"), marker) {
			t.Fatal("git status did not run the planted fsmonitor: the probe proves nothing")
		}
	})
	names := []string{"sub/config", "sub/HEAD", "sub/objects/.keep", "sub/refs/.keep"}
	for _, order := range permutations(names) {
		t.Run("write_file/"+strings.Join(order, ","), func(t *testing.T) {
			ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
			files := bareShape(marker)
			rt := wsRuntimeNoCommands(t, ws) // as POST /v1/tools/write_file on a server without commands
			refused := 0
			for _, p := range order {
				obs := callTool(t, rt, "write_file", map[string]any{"path": p, "content": files[p]})
				if obs.IsError {
					if code(obs) != "protected_path" || !strings.Contains(obs.Content, "sub") || !strings.Contains(obs.Content, "git directory") {
						t.Errorf("write_file %s: %s (%s), want protected_path naming sub and why", p, obs.Content, code(obs))
					}
					refused++
				}
			}
			if refused == 0 {
				t.Error("every write passed")
			}
			if gitStatusRuns(t, filepath.Join(ws, "sub"), marker) {
				t.Fatal("git status in sub ran the command the file tools wrote")
			}
		})
	}
	t.Run("apply_patch", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		files := bareShape(marker)
		var patch strings.Builder
		patch.WriteString("*** Begin Patch\n")
		for _, p := range names {
			fmt.Fprintf(&patch, "*** Add File: %s\n", p)
			for _, line := range strings.SplitAfter(files[p], "\n") {
				if line != "" {
					patch.WriteString("+" + strings.TrimSuffix(line, "\n") + "\n")
				}
			}
		}
		patch.WriteString("*** End Patch\n")
		rt := wsRuntimeNoCommands(t, ws)
		obs := callTool(t, rt, "apply_patch", map[string]any{"patch": patch.String()})
		if !obs.IsError || code(obs) != "protected_path" {
			t.Errorf("apply_patch: %s (%s), want protected_path", obs.Content, code(obs))
		}
		if _, err := os.Lstat(filepath.Join(ws, "sub")); err == nil {
			t.Error("the refused patch left sub behind")
		}
		if gitStatusRuns(t, filepath.Join(ws, "sub"), marker) {
			t.Fatal("git status in sub ran the command the patch wrote")
		}
	})
}

// TestWriteToolsGitShapes: the rule on what looks like a git directory,
// through every writing tool, against the state the write would leave.
func TestWriteToolsGitShapes(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"half/HEAD":  "ref: refs/heads/main\n", // HEAD alone: not yet
		"cfg/config": "[core]\n", "objs/objects/x": "", "wt/HEAD": "x\n",
		"app/hooks/useThing.ts": "x\n", "app/config.ts": "x\n", "app/notes.txt": "x\n",
		"linked/refs/x": "", "linked/config": "[core]\n",
	})
	rt := wsRuntimeNoCommands(t, ws)
	refused := []struct{ tool, path string }{
		{"write_file", "half/config"},      // config beside HEAD
		{"write_file", "cfg/refs/heads/x"}, // refs/ beside a config
		{"write_file", "cfg/HEAD"},
		{"write_file", "objs/config"},
		{"write_file", "objs/hooks/pre-commit"},
		{"write_file", "wt/commondir"},     // HEAD with commondir: git's linked worktree shape
		{"write_file", "linked/notes.txt"}, // inside something that already looks like one
		{"edit_file", "linked/config"},
		{"write_file", "x/.git"},        // a .git file is a pointer git follows
		{"write_file", "x/.GIT/config"}, // any case
		{"write_file", "x/.Git"},
	}
	for _, r := range refused {
		args := map[string]any{"path": r.path, "content": "[core]\n"}
		if r.tool == "edit_file" {
			args = map[string]any{"path": r.path, "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = x"}
		}
		obs := callTool(t, rt, r.tool, args)
		if !obs.IsError || code(obs) != "protected_path" {
			t.Errorf("%s %s: %s (%s), want protected_path", r.tool, r.path, obs.Content, code(obs))
		}
	}
	// Everyday shapes stay writable: a hooks/ and a config beside
	// neither HEAD, objects/ nor refs/.
	for _, p := range []string{"app/hooks/useOther.ts", "app/config", "app/notes.txt", "half/README", "src/objects/user.go", "src/refs.go"} {
		mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": p, "content": "x\n"}))
	}
	obs := callTool(t, rt, "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: p/HEAD\n+ref: x\n*** Add File: p/refs/x\n+x\n*** Add File: p/objects/x\n+x\n*** End Patch\n"})
	if !obs.IsError || code(obs) != "protected_path" {
		t.Errorf("apply_patch of HEAD, objects/ and refs/: %s (%s)", obs.Content, code(obs))
	}
	obs = callTool(t, rt, "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: app/notes.txt\n*** Move to: cfg/HEAD\n@@\n-x\n+y\n*** End Patch\n"})
	if !obs.IsError || code(obs) != "protected_path" {
		t.Errorf("apply_patch moving a file to cfg/HEAD, beside a config: %s (%s)", obs.Content, code(obs))
	}
}

// TestWriteToolsRefuseInvisibleNames: a name with a C1 control character
// or a bidirectional control (notes\u202etxt.exe reads as notes"exe.txt)
// is refused by every writing tool, as C0 control characters are. It
// failed before: only bytes below 0x20 and DEL were refused.
func TestWriteToolsRefuseInvisibleNames(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "a\n"})
	rt := wsRuntimeNoCommands(t, ws)
	for _, r := range []rune{0x80, 0x85, 0x9b, 0x9f, 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069} {
		name := "notes" + string(r) + "txt.exe"
		calls := []struct {
			tool string
			args map[string]any
		}{
			{"write_file", map[string]any{"path": name, "content": "x\n"}},
			{"write_file", map[string]any{"path": "dir" + string(r) + "/x.txt", "content": "x\n"}},
			{"edit_file", map[string]any{"path": name, "old_text": "a", "new_text": "b"}},
			{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: " + name + "\n+x\n*** End Patch\n"}},
			{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: " + name + "\n@@\n-a\n+b\n*** End Patch\n"}},
		}
		for _, c := range calls {
			obs := callTool(t, rt, c.tool, c.args)
			if !obs.IsError || code(obs) != "invalid_path" || !strings.Contains(obs.Content, fmt.Sprintf("U+%04X", r)) {
				t.Errorf("%s with U+%04X: %s (%s), want invalid_path naming the character", c.tool, r, obs.Content, code(obs))
			}
		}
	}
	if got := snapshot(t, ws); len(got) != 2 || got["a.txt"] != "a\n" {
		t.Fatalf("the workspace changed: %v", got)
	}
	// Other non-ASCII names stay writable.
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "café/naïve – 日本.txt", "content": "x\n"}))
}

// TestCommandsBuildNoGitDirectory: run_command and the completion check
// cannot leave a git directory behind either: the sandbox's guard undoes
// it and the call fails with protected_path (the check fails, saying
// why). It failed before the guard.
func TestCommandsBuildNoGitDirectory(t *testing.T) {
	t.Parallel()
	needGit(t)
	build := func(marker string) string {
		return "mkdir -p sub/objects sub/refs && echo 'ref: refs/heads/main' > sub/HEAD && printf '[core]\\n\\tworktree = .\\n\\tfsmonitor = touch " + marker + "\\n' > sub/config"
	}
	t.Run("run_command", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		rt := wsRuntime(t, ws)
		obs := callTool(t, rt, "run_command", map[string]any{"command": build(marker)})
		if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, "sub/HEAD") {
			t.Errorf("run_command: %s (%s), want protected_path naming sub/HEAD", obs.Content, code(obs))
		}
		if gitStatusRuns(t, filepath.Join(ws, "sub"), marker) {
			t.Fatal("git status in sub ran what the command planted")
		}
	})
	t.Run("command tool", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		rt := declaredRuntime(t, ws, toolDoc("echo", commandOp(build(marker)), ""), tools.DeclaredConfig{}, sandbox.Auto)
		for _, s := range rt.Specs() {
			if s.Name == "echo" && !strings.Contains(s.ErrorDescription, "protected_path") {
				t.Errorf("the model is not told about protected_path: %q", s.ErrorDescription)
			}
		}
		obs := callTool(t, rt, "echo", map[string]any{})
		if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, "sub/HEAD") {
			t.Errorf("command tool: %s (%s), want protected_path naming sub/HEAD", obs.Content, code(obs))
		}
		if gitStatusRuns(t, filepath.Join(ws, "sub"), marker) {
			t.Fatal("git status in sub ran what the command tool planted")
		}
	})
	t.Run("check", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		w, err := tools.OpenWorkspace(ws)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		res, err := tools.NewCommandCheck(w, build(marker)).Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Passed || res.OutputTail == nil || !strings.Contains(*res.OutputTail, "git directories") {
			t.Errorf("check: %+v, want a failure that says why", res)
		}
		if gitStatusRuns(t, filepath.Join(ws, "sub"), marker) {
			t.Fatal("git status in sub ran what the check planted")
		}
	})
}

// TestPatchSeesNestedRepositories: the run's patch holds the files of
// nested repositories as files of the workspace, both of one that was
// there before the run and of one made during it, so a command cannot
// hide files from the patch with git init. It failed before: the
// snapshot took a nested repository for a submodule and left it out.
func TestPatchSeesNestedRepositories(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "a\n", "vendor/x/lib.txt": "one\n", "vendor/x/deep/y/z.txt": "zed\n"})
	git(t, ws, "init", "-q")
	for _, inner := range []string{"vendor/x", "vendor/x/deep/y"} {
		git(t, filepath.Join(ws, inner), "init", "-q")
	}
	git(t, filepath.Join(ws, "vendor/x/deep/y"), "add", ".")
	git(t, filepath.Join(ws, "vendor/x/deep/y"), "commit", "-qm", "y")
	git(t, filepath.Join(ws, "vendor/x"), "add", "lib.txt")
	git(t, filepath.Join(ws, "vendor/x"), "commit", "-qm", "x")
	git(t, ws, "add", "a.txt")
	git(t, ws, "commit", "-qm", "init")

	rt := wsRuntime(t, ws)
	mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "echo two >> vendor/x/lib.txt && echo zz >> vendor/x/deep/y/z.txt"}))
	// A nested repository made during the run (here by the test: the
	// sandbox's guard removes the .git a command makes).
	for _, inner := range []string{"made", "made/inner"} {
		os.MkdirAll(filepath.Join(ws, inner), 0o755)
		git(t, filepath.Join(ws, inner), "init", "-q")
	}
	writeFiles(t, ws, map[string]string{"made/f.txt": "hidden?\n", "made/inner/g.txt": "deeper\n"})
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"diff --git a/vendor/x/lib.txt b/vendor/x/lib.txt", " one\n+two\n",
		"diff --git a/vendor/x/deep/y/z.txt b/vendor/x/deep/y/z.txt", " zed\n+zz\n",
		"diff --git a/made/f.txt b/made/f.txt", "+hidden?\n",
		"diff --git a/made/inner/g.txt b/made/inner/g.txt", "+deeper\n",
	} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	if strings.Contains(patch, ".git/") || strings.Contains(patch, "Subproject") {
		t.Errorf("patch holds a repository's metadata or a gitlink:\n%s", patch)
	}
}
