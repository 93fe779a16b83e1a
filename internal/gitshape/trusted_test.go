package gitshape

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// configSeeds are configuration files in the shapes git accepts.
var configSeeds = []string{
	"[core]\n\thooksPath = .husky\n",
	"[core] hooksPath = .husky\n",
	"[CORE]\n\tHOOKSPATH=\"a b\" # comment\n\tbare\n",
	"[include]\n\tpath = ../x.cfg ; comment\n[includeIf \"gitdir:~/w/\"]\n\tpath = \"q\\\"uote\"\n",
	"[core]\n\thooksPath = a\\\n b\n",
	"[core]\n\thooksPath = \"  spaced  \"  tail  \n",
	"[section.Sub]\n\tkey = v\n",
	"[s \"Sub\\\\x\"]\n\tk = \"x\\ty\\n\"\n",
	"\xef\xbb\xbf[core]\r\n\thooksPath = crlf\r\n",
	"# only a comment\n; and another\n",
	"[a]\nk = 1\nk = 2\n[b \"\"]\nk = 3\n",
	"[a]\n\tk = tab\there\n",
}

// gitList is what git config --list says of the file data, as vars; ok is
// false when git refuses the file.
func gitList(t *testing.T, data string) ([]string, bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command("git", "config", "--file", f, "--no-includes", "--list", "-z")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, "none")}
	cmd.Dir = home
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var vars []string
	for rec := range bytes.SplitSeq(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		if len(rec) > 0 {
			vars = append(vars, string(rec))
		}
	}
	return vars, true
}

func ours(data string) []string {
	var vars []string
	for _, v := range ParseConfig([]byte(data)) {
		name := v.Name
		if v.Bool {
			vars = append(vars, name)
		} else {
			vars = append(vars, name+"\n"+v.Value)
		}
	}
	return vars
}

// TestParseConfigMatchesGit: the parser reads what git config reads.
func TestParseConfigMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, data := range configSeeds {
		want, ok := gitList(t, data)
		if !ok {
			t.Errorf("git refuses the seed %q", data)
			continue
		}
		if got := ours(data); !slices.Equal(blanks(got), blanks(want)) {
			t.Errorf("ParseConfig(%q)\n got %q\nwant %q", data, got, want)
		}
	}
}

// blanks makes tabs spaces: git before 2.46 turns each blank inside a
// value into a space, later versions keep it.
func blanks(vars []string) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = strings.ReplaceAll(v, "\t", " ")
	}
	return out
}

// FuzzParseConfig: the parser never panics on a configuration file, and
// reads nothing git does not (a file git refuses may yield a prefix).
func FuzzParseConfig(f *testing.F) {
	for _, s := range configSeeds {
		f.Add(s)
	}
	_, haveGit := exec.LookPath("git")
	f.Fuzz(func(t *testing.T, data string) {
		ParseConfig([]byte(data))
		// Git holds names as C strings: past a NUL byte it sees less than
		// the parser, never more, and prints less still.
		if haveGit != nil || len(data) > 512 || strings.IndexByte(data, 0) >= 0 {
			return
		}
		if want, ok := gitList(t, data); ok {
			if got := ours(data); !slices.Equal(blanks(got), blanks(want)) {
				t.Errorf("ParseConfig(%q)\n got %q\nwant %q", data, got, want)
			}
		}
	})
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, "none"),
		"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func rels(ts []Rel) []string {
	var out []string
	for _, t := range ts {
		kind := "file"
		if t.Dir {
			kind = "dir"
		}
		out = append(out, kind+" "+t.Rel+" "+t.Key+" "+t.Config)
	}
	slices.Sort(out)
	return out
}

// TestInWorkspace: the trusted paths of a repository are resolved as git
// resolves them, and only those inside the workspace are listed.
func TestInWorkspace(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Run("own repository", func(t *testing.T) {
		ws := t.TempDir()
		git(t, ws, "init", "-q")
		git(t, ws, "config", "core.hooksPath", ".husky/_")
		git(t, ws, "config", "--add", "core.hooksPath", filepath.Join(ws, "abs"))
		git(t, ws, "config", "--add", "core.hooksPath", "/elsewhere")
		git(t, ws, "config", "include.path", "../team.cfg")
		git(t, ws, "config", "includeIf.onbranch:main.path", filepath.Join(ws, "cfg", "branch.cfg"))
		if err := os.WriteFile(filepath.Join(ws, "team.cfg"), []byte("[include]\n\tpath = nested.cfg\n[core]\n\thooksPath = fromteam\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got := rels(InWorkspace(ws, Enclosing(ws), nil))
		want := []string{
			"dir .husky core.hooksPath .git/config",
			"dir .husky/_ core.hooksPath .git/config",
			"dir abs core.hooksPath .git/config",
			"dir fromteam core.hooksPath team.cfg",
			"file cfg/branch.cfg includeIf.onbranch:main.path .git/config",
			"file nested.cfg include.path team.cfg",
			"file team.cfg include.path .git/config",
		}
		if !slices.Equal(got, want) {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("inside a repository", func(t *testing.T) {
		repo := t.TempDir()
		ws := filepath.Join(repo, "app")
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "init", "-q")
		git(t, repo, "config", "core.hooksPath", "app/hooks")
		git(t, repo, "config", "--add", "core.hooksPath", "other/hooks")
		if top := Enclosing(ws); top != repo {
			t.Fatalf("Enclosing = %q, want %q", top, repo)
		}
		if got, want := rels(InWorkspace(ws, repo, nil)), []string{"dir hooks core.hooksPath .git/config"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("linked worktree", func(t *testing.T) {
		main := t.TempDir()
		git(t, main, "init", "-q")
		git(t, main, "commit", "-q", "--allow-empty", "-m", "x")
		git(t, main, "config", "core.hooksPath", "hooks")
		wt := filepath.Join(t.TempDir(), "wt")
		git(t, main, "worktree", "add", "-q", wt)
		if got, want := rels(InWorkspace(wt, Enclosing(wt), nil)), []string{"dir hooks core.hooksPath config"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("person's configuration", func(t *testing.T) {
		ws := t.TempDir()
		git(t, ws, "init", "-q")
		global := filepath.Join(t.TempDir(), "gitconfig")
		if err := os.WriteFile(global, []byte("[core]\n\thooksPath = .githooks\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, want := rels(InWorkspace(ws, ws, []string{global})), []string{"dir .githooks core.hooksPath gitconfig"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("hook links", func(t *testing.T) {
		ws := t.TempDir()
		git(t, ws, "init", "-q")
		git(t, ws, "config", "core.hooksPath", ".husky")
		if err := os.MkdirAll(filepath.Join(ws, ".husky"), 0o755); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{".git/hooks/pre-commit": "../../scripts/a", ".husky/pre-push": "../scripts/b", ".husky/post-merge": "/nonexistent/c"} {
			if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
				t.Fatal(err)
			}
		}
		writeAll := func(p string) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeAll(filepath.Join(ws, "scripts", "a"))
		writeAll(filepath.Join(ws, "scripts", "b"))
		var links []string
		for _, r := range InWorkspace(ws, ws, nil) {
			if r.Link != "" {
				links = append(links, r.Rel+" <- "+r.Link)
			}
		}
		slices.Sort(links)
		if want := []string{"scripts/a <- .git/hooks/pre-commit", "scripts/b <- .husky/pre-push"}; !slices.Equal(links, want) {
			t.Errorf("got %q, want %q", links, want)
		}
	})
	t.Run("no repository", func(t *testing.T) {
		if ts := InWorkspace(t.TempDir(), t.TempDir(), nil); ts != nil {
			t.Errorf("got %v", ts)
		}
	})
}
