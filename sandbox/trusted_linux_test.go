package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/internal/gittest"
	"github.com/specloop/specloop/sandbox"
)

// gitCommitRan reports whether a status, a commit and a checkout in dir,
// run as a person would, ran what an attack planted (it creates marker).
func gitCommitRan(t *testing.T, dir, marker string) bool {
	t.Helper()
	return gittest.CommitRan(t, dir, marker)
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func writeAll(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGuardTrustedPaths: a command, under every backend, cannot leave a
// changed or new file where a repository's configuration trusts the work
// tree (the hooks directory core.hooksPath names, husky's layouts, an
// include.path target), for the workspace's repository, the one it sits
// in and nested ones: the guard restores or removes it, and the call
// fails naming it. None is the control: there each attack runs at the
// person's next commit. It failed before: the guard watched git
// directories only.
func TestGuardTrustedPaths(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	plant := func(p, marker string) string {
		return "mkdir -p " + filepath.Dir(p) + " && printf '#!/bin/sh\\ntouch " + marker + "\\n' > " + p + " && chmod +x " + p
	}
	// husky sets up a repository whose hooks are in .husky.
	husky := func(t *testing.T, dir string) {
		writeAll(t, dir, map[string]string{".husky/pre-commit": "#!/bin/sh\nexit 0\n"})
		gitInit(t, dir)
		gitIn(t, dir, "config", "core.hooksPath", ".husky")
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, ws string) (gitDir string) // where the person runs git, relative
		script func(marker string) string
		undone string
	}{
		{"changed hook", func(t *testing.T, ws string) string { husky(t, ws); return "" },
			func(m string) string { return plant(".husky/pre-commit", m) }, ".husky/pre-commit"},
		{"new hook", func(t *testing.T, ws string) string { husky(t, ws); return "" },
			func(m string) string { return plant(".husky/post-checkout", m) }, ".husky/post-checkout"},
		{"hooks directory made by the command", func(t *testing.T, ws string) string {
			gitInit(t, ws)
			gitIn(t, ws, "config", "core.hooksPath", "hooks")
			return ""
		}, func(m string) string { return plant("hooks/pre-commit", m) }, "hooks/pre-commit"},
		{"hooks directory swapped for a link", func(t *testing.T, ws string) string { husky(t, ws); return "" },
			func(m string) string { return plant("evil/pre-commit", m) + " && rm -rf .husky && ln -s evil .husky" }, ".husky"},
		{"absolute hooks path", func(t *testing.T, ws string) string {
			gitInit(t, ws)
			gitIn(t, ws, "config", "core.hooksPath", filepath.Join(ws, "tools", "hooks"))
			return ""
		}, func(m string) string { return plant("tools/hooks/pre-commit", m) }, "tools/hooks/pre-commit"},
		{"husky 9", func(t *testing.T, ws string) string {
			writeAll(t, ws, map[string]string{".husky/_/pre-commit": "#!/bin/sh\nsh \"${0%/*}/../pre-commit\"\n", ".husky/pre-commit": "exit 0\n"})
			gitInit(t, ws)
			gitIn(t, ws, "config", "core.hooksPath", ".husky/_")
			return ""
		}, func(m string) string { return "echo 'touch " + m + "' > .husky/pre-commit" }, ".husky/pre-commit"},
		{"nested repository", func(t *testing.T, ws string) string { husky(t, filepath.Join(ws, "sub", "inner")); return "sub/inner" },
			func(m string) string { return plant("sub/inner/.husky/pre-commit", m) }, "sub/inner/.husky/pre-commit"},
		{"nested repository trusting a sibling", func(t *testing.T, ws string) string {
			inner := filepath.Join(ws, "sub")
			if err := os.Mkdir(inner, 0o755); err != nil {
				t.Fatal(err)
			}
			gitInit(t, inner)
			gitIn(t, inner, "config", "core.hooksPath", "../shared/hooks")
			return "sub"
		}, func(m string) string { return plant("shared/hooks/pre-commit", m) }, "shared/hooks/pre-commit"},
		{"hook linked to a script", func(t *testing.T, ws string) string {
			writeAll(t, ws, map[string]string{"scripts/pre-commit": "#!/bin/sh\nexit 0\n"})
			gitInit(t, ws)
			if err := os.Symlink("../../scripts/pre-commit", filepath.Join(ws, ".git", "hooks", "pre-commit")); err != nil {
				t.Fatal(err)
			}
			return ""
		}, func(m string) string { return plant("scripts/pre-commit", m) }, "scripts/pre-commit"},
		{"workspace inside the repository", func(t *testing.T, ws string) string {
			gitInit(t, filepath.Dir(ws))
			gitIn(t, filepath.Dir(ws), "config", "core.hooksPath", filepath.Base(ws)+"/hooks")
			return ""
		}, func(m string) string { return plant("hooks/pre-commit", m) }, "hooks/pre-commit"},
		{"include.path", func(t *testing.T, ws string) string {
			gitInit(t, ws)
			gitIn(t, ws, "config", "include.path", "../.gitconfig")
			return ""
		}, func(m string) string { return "printf '[core]\\n\\tfsmonitor = touch " + m + "\\n' > .gitconfig" }, ".gitconfig"},
		{"included file through a link", func(t *testing.T, ws string) string {
			writeAll(t, ws, map[string]string{"cfg/team.cfg": "[user]\n\tname = team\n"})
			if err := os.Symlink("cfg/team.cfg", filepath.Join(ws, ".gitconfig")); err != nil {
				t.Fatal(err)
			}
			gitInit(t, ws)
			gitIn(t, ws, "config", "include.path", "../.gitconfig")
			return ""
		}, func(m string) string { return "printf '[core]\\n\\tfsmonitor = touch " + m + "\\n' >> cfg/team.cfg" }, "cfg/team.cfg"},
		{"includeIf path", func(t *testing.T, ws string) string {
			writeAll(t, ws, map[string]string{"cfg/team.cfg": "[user]\n\tname = team\n"})
			gitInit(t, ws)
			gitIn(t, ws, "config", "includeIf.onbranch:**.path", "../cfg/team.cfg")
			return ""
		}, func(m string) string { return "printf '[core]\\n\\tfsmonitor = touch " + m + "\\n' >> cfg/team.cfg" }, "cfg/team.cfg"},
	}
	conf := confining(t)
	for i, tt := range tests {
		for _, b := range withControl(t) {
			t.Run(tt.name+"/"+string(b), func(t *testing.T) {
				shortTurn(t, i, b, conf)
				t.Parallel()
				ws := filepath.Join(t.TempDir(), "ws")
				if err := os.Mkdir(ws, 0o755); err != nil {
					t.Fatal(err)
				}
				marker := filepath.Join(t.TempDir(), "PWNED")
				at := filepath.Join(ws, tt.setup(t, ws))
				_, ge := runGuarded(t, sandbox.Policy{Backend: b}, ws, tt.script(marker))
				ran := gitCommitRan(t, at, marker)
				if b == sandbox.None {
					if !ran {
						t.Fatal("under none the person's git did not run what the command planted: the probe proves nothing")
					}
					return
				}
				if ge == nil || !strings.Contains(ge.Error(), `"`+tt.undone+`"`) || len(ge.Unchecked) > 0 {
					t.Errorf("guard: %v, want it to undo %s", ge, tt.undone)
				}
				if ran {
					t.Fatal("the person's git ran what the command planted")
				}
			})
		}
	}
}

// TestGuardTrustedPathsRestored: a hook the command removed or changed
// is put back as it was, mode included, and a command that leaves the
// hooks alone passes.
func TestGuardTrustedPathsRestored(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			ws := t.TempDir()
			writeAll(t, ws, map[string]string{".husky/pre-commit": "#!/bin/sh\nexit 0\n", ".husky/pre-push": "#!/bin/sh\nexit 0\n"})
			gitInit(t, ws)
			gitIn(t, ws, "config", "core.hooksPath", ".husky")
			if _, ge := runGuarded(t, sandbox.Policy{Backend: b}, ws, "cat .husky/pre-commit > /dev/null && echo x > other.txt"); ge != nil {
				t.Fatalf("a command that reads the hooks failed: %v", ge)
			}
			_, ge := runGuarded(t, sandbox.Policy{Backend: b}, ws, "rm .husky/pre-commit && chmod 644 .husky/pre-push && echo x >> .husky/pre-push")
			if ge == nil || len(ge.Unchecked) > 0 {
				t.Fatalf("guard: %v, want both hooks undone", ge)
			}
			for _, h := range []string{"pre-commit", "pre-push"} {
				fi, err := os.Stat(filepath.Join(ws, ".husky", h))
				if err != nil {
					t.Fatal(err)
				}
				data, _ := os.ReadFile(filepath.Join(ws, ".husky", h))
				if string(data) != "#!/bin/sh\nexit 0\n" || fi.Mode().Perm() != 0o755 {
					t.Errorf(".husky/%s is %q, %v after the guard", h, data, fi.Mode())
				}
			}
		})
	}
}

// A FIFO where the hooks directory was: opening it to read the directory
// would block the guard for good (and, holding its locks, every command
// after it). The guard reads it without blocking, and the next command
// and a file tool's view of the repository return too. It hung before.
func TestGuardTrustedFIFO(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			ws := t.TempDir()
			writeAll(t, ws, map[string]string{".husky/pre-commit": "#!/bin/sh\nexit 0\n"})
			gitInit(t, ws)
			gitIn(t, ws, "config", "core.hooksPath", ".husky")
			done := make(chan *sandbox.GitError, 2)
			go func() {
				_, ge := runGuardedNoFatal(sandbox.Policy{Backend: b}, ws, "rm -rf .husky && mkfifo .husky")
				done <- ge
				_, ge = runGuardedNoFatal(sandbox.Policy{Backend: b}, ws, "true")
				done <- ge
			}()
			for i, what := range []string{"the command that made the FIFO", "the command after it"} {
				select {
				case ge := <-done:
					if i == 0 && ge == nil {
						t.Errorf("%s did not fail", what)
					}
				case <-time.After(60 * time.Second):
					t.Fatalf("%s hangs", what)
				}
			}
			if fi, err := os.Lstat(filepath.Join(ws, ".husky")); err == nil && fi.Mode()&os.ModeNamedPipe == 0 && fi.IsDir() {
				if _, err := os.Stat(filepath.Join(ws, ".husky", "pre-commit")); err != nil {
					t.Errorf("the hooks directory came back without its hook: %v", err)
				}
			}
		})
	}
}
