package tools_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPatchRandomAgainstGit: on random trees, the patch after a run is
// `git diff` of the same changes. Each round commits a random tree (text
// and binary files, executables, symbolic links, an ignored directory, an
// untracked nested repository with ignore rules of its own), changes it a
// little before the run, then runs random changes: in even rounds commands
// (edits, deletions, renames, mode changes, binary files, files in ignored
// directories and in the nested repository) mixed with file tool calls
// before and after the first command, in odd rounds file tool calls only.
// The expected patch is real git's: the files git lists in each repository
// (tracked or untracked, not ignored) before and after the run, committed
// in a scratch repository and diffed there. Each round runs dozens of git
// processes: -short runs one round of each kind, the full run eight.
func TestPatchRandomAgainstGit(t *testing.T) {
	t.Parallel()
	needGit(t)
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	rounds := 8
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(round), 24))
			commands := round%2 == 0
			ws := t.TempDir()
			// File names: spaces and a glob character included; nothing
			// named *.log in the nested repository (see the report).
			var pool []string
			for _, dir := range []string{"", "a/", "a/b/", "c/", "ign/", "nest/", "nest/sub/"} {
				for _, name := range []string{"f0.txt", "f1.txt", "sp ace.txt", "st*r.txt", "x.bin", "run.sh", "debug.log", "n.tmp"} {
					if !strings.HasPrefix(dir, "nest/") || name != "debug.log" {
						pool = append(pool, dir+name)
					}
				}
			}
			content := func() string {
				if r.IntN(5) == 0 {
					return fmt.Sprintf("bin\x00\x01%d\n", r.IntN(1000))
				}
				var b strings.Builder
				for i := range 1 + r.IntN(8) {
					fmt.Fprintf(&b, "line %d %d\n", i, r.IntN(3))
				}
				return b.String()
			}
			files := map[string]string{".gitignore": "*.log\nign/\n", "nest/.gitignore": "*.tmp\n"}
			for _, p := range pool {
				if r.IntN(2) == 0 {
					files[p] = content()
				}
			}
			writeFiles(t, ws, files)
			for _, p := range pool {
				if strings.HasSuffix(p, ".sh") && files[p] != "" {
					must(t, os.Chmod(filepath.Join(ws, p), 0o755))
				}
			}
			must(t, os.Symlink("f0.txt", filepath.Join(ws, "a", "link")))
			for _, p := range []string{".gitignore", "nest/.gitignore"} {
				delete(files, p)
			}
			git(t, ws, "init", "-q")
			git(t, ws, "add", "-A", "--", ".", ":!nest")
			git(t, ws, "commit", "-q", "-m", "init")
			git(t, filepath.Join(ws, "nest"), "init", "-q")
			git(t, filepath.Join(ws, "nest"), "add", "-A")
			git(t, filepath.Join(ws, "nest"), "commit", "-q", "--allow-empty", "-m", "nest")
			// Changes from before the run.
			writeFiles(t, ws, map[string]string{pool[r.IntN(len(pool))]: "before the run\n", "untracked-before.txt": "old\n"})

			rt := wsRuntimeNoCommands(t, ws)
			if commands {
				rt = wsRuntime(t, ws)
			}
			before := listed(t, ws)
			pick := func() string { return pool[r.IntN(len(pool))] }
			quote := func(p string) string { return "'" + p + "'" }
			// A file tool's change before the first command, which takes the
			// snapshot.
			callTool(t, rt, "write_file", map[string]any{"path": "a/first.txt", "content": content()})
			for range 4 + r.IntN(8) {
				p, q := pick(), pick()
				mk := "mkdir -p " + quote(path.Dir(p)) + "; "
				var script string
				switch op := r.IntN(10); {
				case op < 3 || !commands:
					switch r.IntN(3) {
					case 0, 1:
						callTool(t, rt, "write_file", map[string]any{"path": p, "content": content()})
					default:
						if fi, err := os.Lstat(filepath.Join(ws, p)); err == nil && fi.Mode()&0o111 == 0 {
							// An executable file a tool deletes shows mode 100644 (see the report).
							callTool(t, rt, "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Delete File: " + p + "\n*** End Patch\n"})
						}
					}
					continue
				case op == 3:
					script = mk + fmt.Sprintf("printf 'added %d\\n' >> %s", r.IntN(100), quote(p))
				case op == 4:
					script = "rm -f " + quote(p)
				case op == 5:
					script = "mkdir -p " + quote(path.Dir(q)) + "; [ -f " + quote(p) + " ] && mv " + quote(p) + " " + quote(q)
				case op == 6:
					script = "[ -f " + quote(p) + " ] && chmod " + []string{"+x", "-x"}[r.IntN(2)] + " " + quote(p)
				case op == 7:
					script = mk + fmt.Sprintf("printf 'b\\000\\001%d' > %s", r.IntN(100), quote(p))
				case op == 8:
					script = mk + "rm -f " + quote(p) + "; ln -s " + quote(path.Base(q)) + " " + quote(p)
				default:
					script = mk + "printf 'made by a command\\n' > " + quote(p)
				}
				callTool(t, rt, "run_command", map[string]any{"command": script + " || true"})
			}
			after := listed(t, ws)
			patch, err := rt.Patch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := gitDiff(t, before, after); patch != want {
				t.Fatalf("patch (-git diff +patch):\n%s", cmp.Diff(want, patch))
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fileState is a file as git records it: its mode and content (a symbolic
// link's target).
type fileState struct {
	mode    fs.FileMode
	content string
}

// listed returns the files real git lists under ws, tracked or untracked
// and not ignored, in ws's repository and in its nested one, nest.
func listed(t *testing.T, ws string) map[string]fileState {
	t.Helper()
	files := map[string]fileState{}
	for _, repo := range []string{"", "nest/"} {
		out := git(t, filepath.Join(ws, repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard")
		for _, p := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
			full := filepath.Join(ws, repo, p)
			fi, err := os.Lstat(full)
			if p == "" || strings.HasSuffix(p, "/") || err != nil {
				continue // a nested repository, or gone
			}
			var content []byte
			if fi.Mode()&fs.ModeSymlink != 0 {
				target, err := os.Readlink(full)
				must(t, err)
				content = []byte(target)
			} else if content, err = os.ReadFile(full); err != nil {
				t.Fatal(err)
			}
			files[repo+p] = fileState{fi.Mode(), string(content)}
		}
	}
	return files
}

// gitDiff is real git's diff from the files before to those after.
func gitDiff(t *testing.T, before, after map[string]fileState) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	put := func(files map[string]fileState) {
		entries, err := os.ReadDir(dir)
		must(t, err)
		for _, e := range entries {
			if e.Name() != ".git" {
				must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
			}
		}
		for p, f := range files {
			full := filepath.Join(dir, p)
			must(t, os.MkdirAll(filepath.Dir(full), 0o755))
			if f.mode&fs.ModeSymlink != 0 {
				must(t, os.Symlink(f.content, full))
			} else {
				must(t, os.WriteFile(full, []byte(f.content), f.mode.Perm()))
				must(t, os.Chmod(full, f.mode.Perm()))
			}
		}
		git(t, dir, "add", "-A", "-f")
	}
	put(before)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "before")
	put(after)
	cmd := exec.Command("git", "-c", "core.quotePath=false", "diff", "--cached", "--no-color", "--no-renames", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	must(t, cmd.Run())
	return out.String()
}
