package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/sandbox"
)

// isolatedTree makes what an isolated run works in: a repository with
// one commit, and a work tree of it made by gitcheckout.Make, whose
// alternates file names the repository's object store. It returns the
// store, the commit and the work tree.
func isolatedTree(t *testing.T) (objects, commit, wt string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	src := filepath.Join(base, "src")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-C", src}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(src, 0o755)
	git("init", "-q")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	git("add", "a.txt")
	git("commit", "-qm", "first")
	commit = git("rev-parse", "HEAD")
	objects = filepath.Join(src, ".git", "objects")
	wt = filepath.Join(base, "wt")
	if err := gitcheckout.Make(context.Background(), objects, commit, wt); err != nil {
		t.Fatal(err)
	}
	return objects, commit, wt
}

// openedPolicy is the policy of a run opened on wt now: its object
// directories are the ones wt's alternates file names at this moment.
func openedPolicy(t *testing.T, b sandbox.Backend, wt string) sandbox.Policy {
	t.Helper()
	r, err := os.OpenRoot(wt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return sandbox.Policy{Backend: b, AllowGitWrites: true, ObjectDirs: gitcheckout.Alternates(r, wt)}
}

// listing is every path below dir with its size, to see that nothing in
// it changed.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, p+" "+fi.Mode().String()+" "+fi.ModTime().String())
		}
		return nil
	})
	return out
}

// git works in an isolated run's work tree under every confining
// backend: it reads the borrowed objects, and cannot write them. Without
// the object directories (the control) it cannot read the commit.
func TestObjectDirsGit(t *testing.T) {
	t.Parallel()
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			objects, commit, wt := isolatedTree(t)
			p := openedPolicy(t, b, wt)
			if !slices.Equal(p.ObjectDirs, []string{objects}) {
				t.Fatalf("object dirs = %q, want %q", p.ObjectDirs, objects)
			}
			control := runPolicy(t, sandbox.Policy{Backend: b, AllowGitWrites: true}, wt, "git log -1 --format=%H", time.Minute)
			if control.res.ExitCode == 0 || strings.Contains(control.stdout, commit) {
				t.Fatalf("control: git read the commit with no object directories: %+v", control)
			}
			before := listing(t, objects)
			for _, ro := range []bool{true, false} {
				q := p
				q.AllowGitWrites = !ro
				if r := runPolicy(t, q, wt, "git log -1 --format=%H", time.Minute); r.res.ExitCode != 0 || strings.TrimSpace(r.stdout) != commit {
					t.Fatalf("git log (read-only .git %v): %+v", ro, r)
				}
			}
			r := runPolicy(t, p, wt, "echo work > new.txt && git status --porcelain", time.Minute)
			if r.res.ExitCode != 0 || strings.TrimSpace(r.stdout) != "?? new.txt" {
				t.Fatalf("git status: %+v", r)
			}
			r = runPolicy(t, p, wt, "git add new.txt && git -c user.name=m -c user.email=m@x commit -qm work && git log -2 --format=%s", time.Minute)
			if r.res.ExitCode != 0 || r.stdout != "work\nfirst\n" {
				t.Fatalf("git commit: %+v", r)
			}
			// The commit went into the work tree's own store; the borrowed
			// one is read-only, to git and to anything else.
			r = runPolicy(t, p, wt, "touch "+objects+"/planted; echo x >> "+objects+"/info/exclude; rm -rf "+objects+"/pack; mkdir "+objects+"/ab", time.Minute)
			if after := listing(t, objects); !slices.Equal(before, after) {
				t.Fatalf("the borrowed store changed: %+v\nbefore %q\nafter %q", r, before, after)
			}
		})
	}
}

// secretStore makes a directory outside every workspace that looks like
// an object directory (it holds pack/) and holds a secret.
func secretStore(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "objects")
	os.MkdirAll(filepath.Join(d, "pack"), 0o755)
	os.WriteFile(filepath.Join(d, "secret.txt"), []byte("top-secret"), 0o644)
	return d
}

// The attack: the model rewrites the work tree's alternates file to name
// a directory outside the workspace and reads it, in the same command and
// in the next one. The object directories were decided when the run was
// opened, so it reads nothing; the guard puts the file back, so the next
// run opened on the work tree borrows what the first did.
func TestObjectDirsFixedForTheRun(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			objects, _, wt := isolatedTree(t)
			secret := secretStore(t)
			p := openedPolicy(t, b, wt)
			alt := filepath.Join(wt, ".git", "objects", "info", "alternates")
			original, _ := os.ReadFile(alt)
			read := "cat " + secret + "/secret.txt; ls " + secret
			r, err := runScript(t, p, wt, "printf '%s\\n' "+secret+" > .git/objects/info/alternates; "+read, time.Minute)
			if b == sandbox.None {
				if !strings.Contains(r.stdout, "top-secret") {
					t.Fatalf("control: %+v %v", r, err)
				}
				return
			}
			if strings.Contains(r.stdout, "top-secret") || strings.Contains(r.stdout, "pack") {
				t.Fatalf("the command read the directory it wrote into the alternates file: %+v", r)
			}
			if got, _ := os.ReadFile(alt); string(got) != string(original) {
				t.Fatalf("the alternates file was left as %q, want %q", got, original)
			}
			var ge *sandbox.GitError
			if !errors.As(err, &ge) || !slices.Contains(ge.Paths, ".git/objects/info/alternates") {
				t.Fatalf("the guard did not report the alternates file: %v", err)
			}
			if r := runPolicy(t, p, wt, read, time.Minute); strings.Contains(r.stdout, "top-secret") {
				t.Fatalf("a later command read it: %+v", r)
			}
			if q := openedPolicy(t, b, wt); !slices.Equal(q.ObjectDirs, []string{objects}) {
				t.Fatalf("a run opened next borrows %q, want %q", q.ObjectDirs, objects)
			}
		})
	}
}

// A path of the policy that was made to lead elsewhere after it was
// decided (a directory on it swapped for a symbolic link) gives nothing:
// each command opens it again following no symbolic link.
func TestObjectDirsSwappedForLink(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			base := t.TempDir()
			store := filepath.Join(base, "store")
			os.MkdirAll(filepath.Join(store, "objects", "pack"), 0o755)
			sb, err := sandbox.New(sandbox.Policy{Backend: b, ObjectDirs: []string{filepath.Join(store, "objects")}})
			if err != nil {
				t.Fatal(err)
			}
			secret := secretStore(t)
			os.Rename(store, store+".old")
			os.Symlink(filepath.Dir(secret), store)
			r := runWith(t, sb, t.TempDir(), "cat "+store+"/objects/secret.txt")
			if got := strings.Contains(r.stdout, "top-secret"); got != (b == sandbox.None) {
				t.Fatalf("read through the swapped link = %v: %+v", got, r)
			}
		})
	}
}

// A directory of the policy that holds the workspace is left out: read
// access to it would be read access to the workspace's neighbours.
func TestObjectDirsAroundWorkspace(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			base := t.TempDir()
			os.MkdirAll(filepath.Join(base, "pack"), 0o755)
			os.WriteFile(filepath.Join(base, "neighbour.txt"), []byte("top-secret"), 0o644)
			ws := filepath.Join(base, "ws")
			os.Mkdir(ws, 0o755)
			r := runPolicy(t, sandbox.Policy{Backend: b, ObjectDirs: []string{base}}, ws, "cat ../neighbour.txt "+base+"/neighbour.txt", time.Minute)
			if got := strings.Contains(r.stdout, "top-secret"); got != (b == sandbox.None) {
				t.Fatalf("read the neighbour = %v: %+v", got, r)
			}
		})
	}
}

func TestObjectDirsChecked(t *testing.T) {
	base := t.TempDir()
	store := filepath.Join(base, "store", "objects")
	os.MkdirAll(filepath.Join(store, "pack"), 0o755)
	os.Symlink(filepath.Join(base, "store"), filepath.Join(base, "link"))
	os.MkdirAll(filepath.Join(base, "plain"), 0o755)
	if _, err := sandbox.New(sandbox.Policy{Backend: sandbox.None, ObjectDirs: []string{store}}); err != nil {
		t.Fatalf("control: %v", err)
	}
	many := slices.Repeat([]string{store}, sandbox.MaxObjectDirs+1)
	for _, dirs := range [][]string{
		{"objects"}, {store + "/../objects"}, {"/"}, {filepath.Join(base, "plain")},
		{filepath.Join(base, "link", "objects")}, {filepath.Join(base, "missing")}, many,
	} {
		_, err := sandbox.New(sandbox.Policy{Backend: sandbox.None, ObjectDirs: dirs})
		if err == nil || !strings.Contains(err.Error(), "object dirs") {
			t.Errorf("%q: %v, want an error naming the object dirs", dirs, err)
		}
	}
}

// runWith runs script with /bin/sh in dir through sb.
func runWith(t *testing.T, sb *sandbox.Sandbox, dir, script string) ran {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out, errb bytes.Buffer
	res, err := sb.Run(context.Background(), sandbox.Command{Args: []string{"/bin/sh", "-c", script}, Dir: d, DirPath: dir, Stdout: &out, Stderr: &errb, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return ran{res, out.String(), errb.String()}
}

// The borrowed objects are readable on the unprivileged Landlock path too
// (a user namespace for the read-only .git), which root is made to take.
func TestObjectDirsUserNamespace(t *testing.T) {
	if err := sandbox.Available(sandbox.Landlock); err != nil {
		t.Skip(err)
	}
	_, commit, wt := isolatedTree(t)
	p := openedPolicy(t, sandbox.Landlock, wt)
	p.AllowGitWrites = false
	sandbox.ForceUserNS(true)
	defer sandbox.ForceUserNS(false)
	if r := runPolicy(t, p, wt, "git log -1 --format=%H", time.Minute); r.res.ExitCode != 0 || strings.TrimSpace(r.stdout) != commit {
		t.Fatalf("git log: %+v", r)
	}
}
