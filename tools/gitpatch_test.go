package tools_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/tools"
)

// secretValue is put in the runtime's environment: a payload that runs
// would see it.
const secretValue = "sk-specloop-test-secret-4242"

// payloadScript writes a marker (with its environment) into markers when it
// runs, then passes its input through, so git carries on as if nothing
// happened.
func payloadScript(t *testing.T, dir, name, markers string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	script := fmt.Sprintf("#!/bin/sh\nenv > %s/%s.$$\ncat\n", markers, name)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPatchRunsNothingTheWorkspaceControls: a workspace whose git
// configuration, attributes or hooks name programs (everything in the
// workspace, .git included, is the model's to write, through commands or a
// checkout) never gets them executed by the patch computation, even with
// commands disabled, and the patch is still right.
func TestPatchRunsNothingTheWorkspaceControls(t *testing.T) {
	needGit(t)
	t.Setenv("OPENAI_API_KEY", secretValue)
	t.Setenv("SPECLOOP_TOKEN", secretValue)
	tests := []struct {
		name string
		// setup configures the repository at ws to run payloads from bin.
		setup func(t *testing.T, ws, bin, markers string)
	}{
		{"filter clean driver", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "clean", markers)
			appendConfig(t, ws, "[filter \"x\"]\n\tclean = "+p+"\n\tsmudge = "+p+"\n\trequired = true\n")
			writeFiles(t, ws, map[string]string{".gitattributes": "* filter=x\n"})
		}},
		{"filter process", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "process", markers)
			appendConfig(t, ws, "[filter \"x\"]\n\tprocess = "+p+"\n")
			writeFiles(t, ws, map[string]string{"sub/.gitattributes": "* filter=x\n", ".gitattributes": "*.txt filter=x\n"})
		}},
		{"core.fsmonitor", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "fsmonitor", markers)
			appendConfig(t, ws, "[core]\n\tfsmonitor = "+p+"\n")
		}},
		{"post-index-change hook", func(t *testing.T, ws, bin, markers string) {
			payloadScript(t, filepath.Join(ws, ".git", "hooks"), "post-index-change", markers)
		}},
		{"core.hooksPath", func(t *testing.T, ws, bin, markers string) {
			payloadScript(t, bin, "post-index-change", markers)
			appendConfig(t, ws, "[core]\n\thooksPath = "+bin+"\n")
		}},
		{"diff.external", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "external", markers)
			appendConfig(t, ws, "[diff]\n\texternal = "+p+"\n")
		}},
		{"textconv", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "textconv", markers)
			appendConfig(t, ws, "[diff \"x\"]\n\ttextconv = "+p+"\n\tcommand = "+p+"\n")
			writeFiles(t, ws, map[string]string{".gitattributes": "*.txt diff=x\n"})
		}},
		{"core.pager", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "pager", markers)
			appendConfig(t, ws, "[core]\n\tpager = "+p+"\n[pager]\n\tdiff = "+p+"\n")
		}},
		{"nested repository", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "nested", markers)
			writeFiles(t, ws, map[string]string{"sub/inner/x.txt": "x\n", "sub/inner/.gitattributes": "* filter=x diff=x\n"})
			inner := filepath.Join(ws, "sub", "inner")
			git(t, inner, "init", "-q")
			git(t, inner, "add", ".")
			git(t, inner, "commit", "-q", "-m", "inner")
			appendConfig(t, inner, "[filter \"x\"]\n\tclean = "+p+"\n[diff \"x\"]\n\ttextconv = "+p+"\n[core]\n\tfsmonitor = "+p+"\n")
			payloadScript(t, filepath.Join(inner, ".git", "hooks"), "post-index-change", markers)
			writeFiles(t, ws, map[string]string{"sub/inner/x.txt": "changed\n"})
		}},
		{"include.path", func(t *testing.T, ws, bin, markers string) {
			p := payloadScript(t, bin, "included", markers)
			writeFiles(t, ws, map[string]string{
				"evil.cfg":       "[filter \"x\"]\n\tclean = " + p + "\n[core]\n\tfsmonitor = " + p + "\n",
				".gitattributes": "* filter=x\n",
			})
			appendConfig(t, ws, "[include]\n\tpath = "+filepath.Join(ws, "evil.cfg")+"\n")
		}},
	}
	// Every case starts from a copy of one committed repository: git runs
	// once for all of them.
	base := t.TempDir()
	writeFiles(t, base, map[string]string{"a.txt": "one\ntwo\n", "sub/b.txt": "bee\n"})
	git(t, base, "init", "-q")
	git(t, base, "add", ".")
	git(t, base, "commit", "-q", "-m", "init")
	for _, tt := range tests {
		// Without commands the file tools' record is the patch's base;
		// with one, a snapshot seeded from the workspace's index is.
		for _, commands := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/commands=%v", tt.name, commands), func(t *testing.T) {
				t.Parallel() // the cases share nothing; the parent's environment holds until they end
				ws := t.TempDir()
				bin, markers := t.TempDir(), t.TempDir()
				must(t, os.CopyFS(ws, os.DirFS(base)))
				tt.setup(t, ws, bin, markers)

				rt := wsRuntimeNoCommands(t, ws)
				if commands {
					rt = wsRuntime(t, ws)
					mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "true"}))
				}
				mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "a.txt", "old_text": "two", "new_text": "2"}))
				mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "sub/new.txt", "content": "new\n"}))
				patch, err := rt.Patch(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				// Again: the first patch's snapshot is in the private index now.
				if again, err := rt.Patch(context.Background()); err != nil || again != patch {
					t.Errorf("a second Patch differs (%v):\n%s", err, again)
				}
				entries, err := os.ReadDir(markers)
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) > 0 {
					env := readFile(t, filepath.Join(markers, entries[0].Name()))
					t.Errorf("computing the patch ran the workspace's payload %d times (%s; the secret visible to it: %v)", len(entries), entries[0].Name(), strings.Contains(env, secretValue))
				}
				for _, want := range []string{"diff --git a/a.txt b/a.txt", "-two\n+2\n", "diff --git a/sub/new.txt b/sub/new.txt", "+new\n"} {
					if !strings.Contains(patch, want) {
						t.Errorf("patch lacks %q:\n%s", want, patch)
					}
				}
			})
		}
	}
}

// appendConfig adds text to the repository's .git/config.
func appendConfig(t *testing.T, ws, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(ws, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestPatchIgnoresTheRuntimesGitEnvironment: git variables in the runtime's
// environment (GIT_DIR, GIT_EXTERNAL_DIFF, GIT_CONFIG_*) do not reach the
// git that computes the patch.
func TestPatchIgnoresTheRuntimesGitEnvironment(t *testing.T) {
	needGit(t)
	ws, bin, markers := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "one\ntwo\n"})
	git(t, ws, "init", "-q")
	git(t, ws, "add", ".")
	git(t, ws, "commit", "-q", "-m", "init")
	p := payloadScript(t, bin, "env", markers)
	t.Setenv("GIT_EXTERNAL_DIFF", p)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", p)
	rt := wsRuntimeNoCommands(t, ws)
	mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "a.txt", "old_text": "two", "new_text": "2"}))
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(markers); len(entries) > 0 {
		t.Errorf("computing the patch ran %s", entries[0].Name())
	}
	if !strings.Contains(patch, "diff --git a/a.txt b/a.txt") {
		t.Errorf("patch:\n%s", patch)
	}
}

// wsRuntimeNoCommands is wsRuntime with run_command disabled.
func wsRuntimeNoCommands(t testing.TB, dir string) *tools.Runtime {
	t.Helper()
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// The file tools refuse to write into a repository's metadata, at any
// depth and in any case; reading it stays allowed.
func TestWriteToolsRefuseGitDirectory(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		".git/config": "[core]\n", "sub/.git/config": "[core]\n", "a.txt": "a\n",
	})
	// A bare repository, and the git directory of a linked worktree.
	for _, gd := range []string{"bare.git", "gitdirs/wt"} {
		writeFiles(t, ws, map[string]string{gd + "/HEAD": "ref: refs/heads/main\n", gd + "/config": "[core]\n", gd + "/objects/info/packs": "", gd + "/refs/heads/main": "0\n"})
	}
	writeFiles(t, ws, map[string]string{"wt/.git": "gitdir: ../gitdirs/wt\n"})
	if err := os.Symlink(".git", filepath.Join(ws, "meta")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(ws, "subdir")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, ws)
	rt := wsRuntimeNoCommands(t, ws)
	for _, p := range []string{".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".GIT/config", "sub/.Git/info/attributes", ".git", "x/../.git/config", "meta/config", "subdir/.git/config", "bare.git/config", "bare.git/hooks/post-index-change", "gitdirs/wt/config", "wt/.git"} {
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"write_file", map[string]any{"path": p, "content": "[core]\n\tfsmonitor = /bin/true\n"}},
			{"edit_file", map[string]any{"path": p, "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = /bin/true"}},
		} {
			obs := callTool(t, rt, call.tool, call.args)
			if !obs.IsError || code(obs) != "protected_path" {
				t.Errorf("%s %q: %s (%s), want protected_path", call.tool, p, obs.Content, code(obs))
			} else if !strings.Contains(obs.Content, ".git") {
				t.Errorf("%s %q: the message does not say why: %s", call.tool, p, obs.Content)
			}
		}
	}
	if diff := cmp.Diff(before, snapshot(t, ws)); diff != "" {
		t.Fatalf("the workspace changed:\n%s", diff)
	}
	mustSucceed(t, callTool(t, rt, "read_file", map[string]any{"path": ".git/config"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": ".gitignore", "content": "*.log\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "git/config", "content": "x\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": ".github/workflow.yml", "content": "x\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "wt/file.txt", "content": "x\n"}))
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "gitdirs/notes.txt", "content": "x\n"}))
}

// The write tools refuse a file with other hard links: its other name may
// be outside the workspace, where os.Root cannot see it.
func TestWriteToolsRefuseHardLinks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	ws := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "the secret\n"})
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "linked.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	rt := wsRuntimeNoCommands(t, ws)
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "linked.txt", "content": "new\n"}},
		{"edit_file", map[string]any{"path": "linked.txt", "old_text": "secret", "new_text": "public"}},
	} {
		obs := callTool(t, rt, call.tool, call.args)
		if !obs.IsError || code(obs) != "hard_link" {
			t.Errorf("%s: %s (%s), want hard_link", call.tool, obs.Content, code(obs))
		}
		if strings.Contains(obs.Content, "the secret") {
			t.Errorf("%s shows the linked file's content: %s", call.tool, obs.Content)
		}
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "the secret\n" {
		t.Fatalf("the outside file is now %q", got)
	}
	if got := readFile(t, filepath.Join(ws, "linked.txt")); got != "the secret\n" {
		t.Fatalf("the linked file is now %q", got)
	}
	// Reading stays allowed (the README says hard links are outside
	// os.Root's protection).
	mustSucceed(t, callTool(t, rt, "read_file", map[string]any{"path": "linked.txt"}))
}

// injectedName is a file name that, written unquoted into a diff header,
// makes the patch create injected.sh.
const injectedName = "x\n+++ b/injected.sh"

// write_file refuses names a unified diff cannot carry.
func TestWriteFileRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	rt := wsRuntimeNoCommands(t, ws)
	for _, name := range []string{injectedName, "a\rb", "tab\there", "bell\a", "del\x7f", "dir\n/x.txt"} {
		obs := callTool(t, rt, "write_file", map[string]any{"path": name, "content": "echo pwned\n"})
		if !obs.IsError || code(obs) != "invalid_path" {
			t.Errorf("write_file %q: %s (%s), want invalid_path", name, obs.Content, code(obs))
		} else if !strings.Contains(obs.Content, "control character") {
			t.Errorf("write_file %q: the message does not name the problem: %s", name, obs.Content)
		}
	}
	if entries, _ := os.ReadDir(ws); len(entries) > 0 {
		t.Errorf("the workspace has %d entries", len(entries))
	}
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	applyCreatesNoInjected(t, patch, nil)
}

// A file named to inject a header, made or changed by a command in a git
// work tree: the patch quotes its name, so applying it creates no
// injected.sh, with git apply or with patch -p1.
func TestPatchQuotesHostileNames(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "a\n", injectedName: "old\n", "sp ace.txt": "s\n"})
	git(t, ws, "init", "-q")
	git(t, ws, "add", ".")
	git(t, ws, "commit", "-q", "-m", "init")
	rt := wsRuntime(t, ws)
	mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "printf 'new\\n' > \"$(printf 'x\\n+++ b/injected.sh')\"; printf 'made\\n' > \"$(printf 'y\\n+++ b/injected.sh')\"; echo t > 'sp ace.txt'"}))
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, `"a/x\n+++ b/injected.sh"`) {
		t.Errorf("the name is not quoted as git quotes it:\n%s", patch)
	}
	applyCreatesNoInjected(t, patch, map[string]string{"a.txt": "a\n", injectedName: "old\n", "sp ace.txt": "s\n"})
}

// applyCreatesNoInjected applies patch to a fresh copy of files with git
// apply and with patch -p1 (when installed) and fails if injected.sh
// appears.
func applyCreatesNoInjected(t *testing.T, patch string, files map[string]string) {
	t.Helper()
	if patch == "" {
		return
	}
	appliers := [][]string{{"git", "apply", "--unsafe-paths"}, {"patch", "-p1", "--batch", "-i"}}
	for _, a := range appliers {
		if _, err := exec.LookPath(a[0]); err != nil {
			t.Logf("%s is not installed", a[0])
			continue
		}
		dir := t.TempDir()
		writeFiles(t, dir, files)
		pf := filepath.Join(t.TempDir(), "run.patch")
		if err := os.WriteFile(pf, []byte(patch), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(a[0], append(a[1:], pf)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if _, serr := os.Lstat(filepath.Join(dir, "injected.sh")); serr == nil {
			t.Errorf("%v created injected.sh (%v):\n%s\npatch:\n%s", a, err, out, patch)
		}
		if err != nil {
			t.Errorf("%v failed: %v\n%s\npatch:\n%s", a, err, out, patch)
		}
	}
}

// The patch's private repository is a temporary directory that
// Workspace.Close removes; the patch is cut at its cap; attributes in the
// work tree change no byte of it; the repository's info/exclude is
// honoured; what commands do inside .git is not part of it.
func TestPatchPrivateRepository(t *testing.T) {
	needGit(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"crlf.txt": "one\r\ntwo\r\n", "utf16.txt": "plain\n"})
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "init")
	writeFiles(t, dir, map[string]string{
		".git/info/exclude": "secret-*.env\n",
		".gitattributes":    "*.txt text eol=lf\nutf16.txt working-tree-encoding=UTF-16\n",
	})

	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := tools.New(tools.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "crlf.txt", "old_text": "two", "new_text": "2"}))
	mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "echo x > secret-a.env; echo plain2 > utf16.txt; echo '[core]' >> .git/config; head -c 5000000 /dev/zero | tr '\\0' 'a' | fold -w 99 > zz-big.txt"}))
	// A .git a command makes is removed (and the call fails): it is
	// not part of the patch either.
	if obs := callTool(t, rt, "run_command", map[string]any{"command": "mkdir -p sub/.git; echo y > sub/.git/HEAD"}); code(obs) != "protected_path" {
		t.Errorf("a command that made sub/.git: %s (%s), want protected_path", obs.Content, code(obs))
	}
	patch, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, "-two\r\n+2\r\n") {
		t.Errorf("the CRLF line ends are not kept byte for byte:\n%.300s", patch)
	}
	if !strings.Contains(patch, "-plain\n+plain2\n") {
		t.Errorf("utf16.txt's change is missing:\n%.600s", patch)
	}
	for _, unwanted := range []string{"secret-a.env", ".git/config", "sub/.git"} {
		if strings.Contains(patch, unwanted) {
			t.Errorf("the patch has %s", unwanted)
		}
	}
	if len(patch) > 4<<20+100 || !strings.HasSuffix(patch, " more bytes]\n") || !strings.Contains(patch, "[patch cut: ") {
		t.Errorf("the patch is not cut at its cap: %d bytes, ending %q", len(patch), patch[max(0, len(patch)-60):])
	}
	if entries, _ := os.ReadDir(tmp); len(entries) == 0 {
		t.Fatal("no private repository in TMPDIR: is the patch still computed in the workspace's own?")
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("Close left %s in TMPDIR", entries[0].Name())
	}
}
