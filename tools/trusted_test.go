package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/internal/gittest"
	"github.com/specloop/specloop/sandbox"
)

// gitCommitRuns reports whether a status, a commit and a checkout in dir,
// run as a person would, ran what an attack planted (it touches marker):
// pre-commit and post-checkout hooks, or an fsmonitor of an included
// configuration.
func gitCommitRuns(t *testing.T, dir, marker string) bool {
	t.Helper()
	return gittest.CommitRan(t, dir, marker)
}

// huskyRepo makes dir a repository whose configuration trusts the work
// tree's .husky for its hooks (as husky sets it up), with an executable
// .husky/pre-commit, and a second repository nested in sub/inner that
// does the same. It returns the hook's body that touches marker.
func huskyRepo(t *testing.T, dir, marker string) string {
	t.Helper()
	for _, d := range []string{dir, filepath.Join(dir, "sub", "inner")} {
		writeFiles(t, d, map[string]string{"README": "r\n", ".husky/pre-commit": "#!/bin/sh\nexit 0\n"})
		if err := os.Chmod(filepath.Join(d, ".husky", "pre-commit"), 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, d, "init", "-q")
		git(t, d, "config", "core.hooksPath", ".husky")
		git(t, d, "add", "README")
		git(t, d, "commit", "-q", "-m", "init")
	}
	return "#!/bin/sh\ntouch " + marker + "\n"
}

// TestWriteToolsRefuseTrustedPaths: the file tools never write where the
// workspace's repository (or a nested one) is configured to take hooks or
// configuration from (core.hooksPath = .husky, include.path,
// includeIf.*.path): git runs what is there for the person, unsandboxed.
// It failed before: only .git and git-shaped directories were refused,
// and the person's next commit ran the model's pre-commit.
func TestWriteToolsRefuseTrustedPaths(t *testing.T) {
	t.Parallel()
	needGit(t)
	t.Run("control", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		body := huskyRepo(t, ws, marker)
		writeFiles(t, ws, map[string]string{".husky/pre-commit": body})
		if !gitCommitRuns(t, ws, marker) {
			t.Fatal("git commit did not run .husky/pre-commit: the probe proves nothing")
		}
	})
	// calls are the ways a write tool can put body at p.
	calls := func(p, body string, exists bool) map[string]map[string]any {
		added := "+" + strings.ReplaceAll(strings.TrimSuffix(body, "\n"), "\n", "\n+") + "\n"
		c := map[string]map[string]any{
			"write_file":  {"path": p, "content": body},
			"apply_patch": {"patch": "*** Begin Patch\n*** Add File: " + p + "\n" + added + "*** End Patch\n"},
		}
		if exists {
			c["edit_file"] = map[string]any{"path": p, "old_text": "exit 0", "new_text": body[len("#!/bin/sh\n"):]}
			c["apply_patch"] = map[string]any{"patch": "*** Begin Patch\n*** Update File: " + p + "\n@@\n-#!/bin/sh\n-exit 0\n" + added + "*** End Patch\n"}
		}
		return c
	}
	for _, dir := range []string{"", "sub/inner/"} {
		for _, hook := range []string{"pre-commit", "post-checkout"} {
			p := dir + ".husky/" + hook
			for _, tool := range []string{"write_file", "edit_file", "apply_patch"} {
				if tool == "edit_file" && hook != "pre-commit" {
					continue
				}
				t.Run(tool+"/"+p, func(t *testing.T) {
					if testing.Short() && (dir != "" || hook != "pre-commit") {
						t.Skip("-short writes each tool's pre-commit at the top; the nested repository and the new hook run without -short")
					}
					t.Parallel()
					ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
					body := huskyRepo(t, ws, marker)
					before := snapshot(t, ws)
					rt := wsRuntimeNoCommands(t, ws)
					obs := callTool(t, rt, tool, calls(p, body, hook == "pre-commit")[tool])
					if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, "core.hooksPath") {
						t.Errorf("%s %s: %s (%s), want protected_path naming core.hooksPath", tool, p, obs.Content, code(obs))
					}
					if after := snapshot(t, ws); after[p] != before[p] {
						t.Errorf("%s was written: %q", p, after[p])
					}
					if gitCommitRuns(t, filepath.Join(ws, dir), marker) {
						t.Fatal("the person's git commit ran what the model wrote")
					}
				})
			}
		}
	}
	t.Run("through a symbolic link", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		body := huskyRepo(t, ws, marker)
		if err := os.Symlink(".husky", filepath.Join(ws, "h")); err != nil {
			t.Fatal(err)
		}
		rt := wsRuntimeNoCommands(t, ws)
		obs := callTool(t, rt, "write_file", map[string]any{"path": "h/pre-commit", "content": body})
		if !obs.IsError || code(obs) != "protected_path" {
			t.Errorf("write_file h/pre-commit: %s (%s), want protected_path", obs.Content, code(obs))
		}
	})
	t.Run("workspace inside the repository", func(t *testing.T) {
		repo, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		writeFiles(t, repo, map[string]string{"app/README": "r\n"})
		git(t, repo, "init", "-q")
		git(t, repo, "config", "core.hooksPath", "app/hooks")
		rt := wsRuntimeNoCommands(t, filepath.Join(repo, "app"))
		obs := callTool(t, rt, "write_file", map[string]any{"path": "hooks/pre-commit", "content": "touch " + marker})
		if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, "core.hooksPath") {
			t.Errorf("write_file hooks/pre-commit: %s (%s), want protected_path naming core.hooksPath", obs.Content, code(obs))
		}
		mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "hooksx/pre-commit", "content": "fine"}))
	})
	t.Run("hook linked to a script", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		writeFiles(t, ws, map[string]string{"scripts/pre-commit": "#!/bin/sh\nexit 0\n"})
		if err := os.Chmod(filepath.Join(ws, "scripts", "pre-commit"), 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, ws, "init", "-q")
		if err := os.Symlink("../../scripts/pre-commit", filepath.Join(ws, ".git", "hooks", "pre-commit")); err != nil {
			t.Fatal(err)
		}
		rt := wsRuntimeNoCommands(t, ws)
		obs := callTool(t, rt, "write_file", map[string]any{"path": "scripts/pre-commit", "content": "#!/bin/sh\ntouch " + marker + "\n"})
		if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, ".git/hooks/pre-commit") {
			t.Errorf("write_file scripts/pre-commit: %s (%s), want protected_path naming the hook", obs.Content, code(obs))
		}
		if gitCommitRuns(t, ws, marker) {
			t.Fatal("the person's git commit ran what the model wrote")
		}
	})
	t.Run("nested repository trusting a sibling", func(t *testing.T) {
		ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
		writeFiles(t, ws, map[string]string{"sub/README": "r\n"})
		git(t, filepath.Join(ws, "sub"), "init", "-q")
		git(t, filepath.Join(ws, "sub"), "config", "core.hooksPath", "../shared/hooks")
		rt := wsRuntimeNoCommands(t, ws)
		obs := callTool(t, rt, "write_file", map[string]any{"path": "shared/hooks/pre-commit", "content": "touch " + marker})
		if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, `repository "sub"`) {
			t.Errorf("write_file shared/hooks/pre-commit: %s (%s), want protected_path naming the repository sub", obs.Content, code(obs))
		}
	})
	for _, key := range []string{"include.path", `includeIf.gitdir:/.path`, `includeIf.onbranch:main.path`} {
		t.Run(key, func(t *testing.T) {
			ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
			writeFiles(t, ws, map[string]string{"README": "r\n"})
			git(t, ws, "init", "-q")
			git(t, ws, "config", key, "../.gitconfig") // relative to .git/
			rt := wsRuntimeNoCommands(t, ws)
			obs := callTool(t, rt, "write_file", map[string]any{"path": ".gitconfig", "content": "[core]\n\tfsmonitor = touch " + marker + "\n"})
			if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(strings.ToLower(obs.Content), strings.ToLower(key)) {
				t.Errorf("write_file .gitconfig: %s (%s), want protected_path naming %s", obs.Content, code(obs), key)
			}
			if gitCommitRuns(t, ws, marker) {
				t.Fatal("the person's git status ran what the model wrote")
			}
		})
	}
}

// TestCommandsCannotChangeTrustedPaths: run_command, under every backend,
// cannot leave a changed or new hook in the directory core.hooksPath
// names: the sandbox's guard restores or removes it and the call fails
// with protected_path. None is the control: there the person's next
// commit runs the hook. It failed before: the guard watched .git only.
func TestCommandsCannotChangeTrustedPaths(t *testing.T) {
	t.Parallel()
	needGit(t)
	for _, b := range backends(t) {
		for _, hook := range []string{"pre-commit", "post-checkout"} {
			t.Run(string(b)+"/"+hook, func(t *testing.T) {
				if testing.Short() && hook != "pre-commit" {
					t.Skip("-short plants pre-commit under each backend; post-checkout runs without -short")
				}
				t.Parallel()
				ws, marker := t.TempDir(), filepath.Join(t.TempDir(), "PWNED")
				huskyRepo(t, ws, marker)
				before := snapshot(t, ws)
				rt := sandboxRuntime(t, ws, sandbox.Policy{Backend: b})
				script := "printf '#!/bin/sh\\ntouch " + marker + "\\n' > .husky/" + hook + " && chmod +x .husky/" + hook
				obs := callTool(t, rt, "run_command", map[string]any{"command": script})
				if b == sandbox.None {
					if !gitCommitRuns(t, ws, marker) {
						t.Fatal("under none the planted hook did not run: the probe proves nothing")
					}
					return
				}
				if !obs.IsError || code(obs) != "protected_path" || !strings.Contains(obs.Content, ".husky/"+hook) {
					t.Errorf("run_command: %s (%s), want protected_path naming .husky/%s", obs.Content, code(obs), hook)
				}
				if after := snapshot(t, ws); after[".husky/"+hook] != before[".husky/"+hook] {
					t.Errorf(".husky/%s is %q after the command, was %q", hook, after[".husky/"+hook], before[".husky/"+hook])
				}
				if gitCommitRuns(t, ws, marker) {
					t.Fatal("the person's git commit ran the hook the command planted")
				}
			})
		}
	}
}
