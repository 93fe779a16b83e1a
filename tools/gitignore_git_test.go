package tools_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gitignoreFixture is a tree whose .gitignore files use nested and negated
// rules, directory-only and anchored patterns, `**`, escaped `\!` and `\#`,
// and trailing spaces (plain and escaped). Every file holds "needle".
var gitignoreFixture = map[string]string{
	".gitignore": strings.Join([]string{
		"# a comment",
		"*.log",
		"!important.log",
		"build/",
		"/root-only.txt",
		"doc/**/*.tmp",
		`\!bang.txt`,
		`\#hash.txt`,
		"trailing.txt   ",
		`space\ `,
		"a/**/z.txt",
		"**/gen/",
		"*.o",
		"!/re/inc.o",
		"dironly/",
		"*.cfg",
		"!keepdir",
		"!/anch/dir",
		"inside/**",
		"!inside/keep.txt",
		"[!a-m]*.bak",
		"x**y.md",
		"**/nested/**/deep.md",
		"",
	}, "\n"),
	"sub/.gitignore":      "!keep.log\nlocal/\n*.txt\n!wanted.txt\n/anchored.md\n",
	"sub/deep/.gitignore": "!*.txt\nsecret.*\n",

	"a.log": "", "important.log": "", "keep.log": "", "sub/keep.log": "", "sub/x.log": "",
	"sub/deep/keep.log": "", "sub/deep/y.log": "",
	"build/out.go": "", "other/build": "", "sub/build/x.go": "",
	"root-only.txt": "", "sub2/root-only.txt": "",
	"doc/x.tmp": "", "doc/a/b/y.tmp": "", "other/doc/x.tmp": "", "doc/x.tmp.keep": "",
	"!bang.txt": "", "bang.txt": "", "#hash.txt": "", "hash.txt": "",
	"trailing.txt": "", "trailing.txt   x": "", "space ": "", "space": "",
	"a/z.txt": "", "a/b/c/z.txt": "", "b/a/z.txt": "",
	"gen/g.go": "", "x/gen/f.go": "", "x/gen.go": "",
	"re/inc.o": "", "re/other.o": "", "sub/re/inc.o": "",
	"dironly": "", "sub3/dironly/f.go": "",
	"sub/a.txt": "", "sub/wanted.txt": "", "sub/anchored.md": "", "sub/more/anchored.md": "",
	"sub/local/f.go": "", "sub/deep/local/f.go": "", "sub/deep/c.txt": "", "sub/deep/secret.go": "",
	"top.txt": "", "sub/deep/more/d.txt": "",
	"keepdir/x.cfg": "", "x.cfg": "", "anch/dir/y.cfg": "",
	"inside/a.txt": "", "inside/keep.txt": "", "inside/d/b.txt": "",
	"zed.bak": "", "abc.bak": "", "d/zed.bak": "",
	"xay.md": "", "xy.md": "", "x/y.md": "",
	"nested/deep.md": "", "a/nested/b/c/deep.md": "", "nested/x.md": "",
}

// gitListed is what git itself lists in dir: tracked files and untracked
// ones that no exclude rule ignores, with no global or system configuration.
func gitListed(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--others", "--cached", "--exclude-standard")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(files)
	return files
}

// list_files and search skip exactly what git ignores: the walk's
// .gitignore handling is compared with git's on a fixture tree, from the
// root and from subdirectories (whose ignores above them still apply).
func TestGitignoreMatchesGit(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := t.TempDir()
	files := map[string]string{}
	for name, content := range gitignoreFixture {
		if content == "" {
			content = "needle\n"
		}
		files[name] = content
	}
	writeFiles(t, dir, files)
	git(t, dir, "init", "-q")
	want := gitListed(t, dir)
	if len(want) < 20 || len(want) > len(files)-15 {
		t.Fatalf("git lists %d of %d files: the fixture no longer tests what it should: %q", len(want), len(files), want)
	}
	rt := wsRuntime(t, dir)
	for _, start := range []string{".", "sub", "sub/deep", "doc", "re"} {
		t.Run("list_files "+start, func(t *testing.T) {
			obs := mustSucceed(t, callTool(t, rt, "list_files", map[string]any{"path": start, "limit": 10000}))
			var got []string
			for _, f := range data(obs)["files"].([]any) {
				got = append(got, f.(string))
			}
			if diff := cmp.Diff(under(want, start), got); diff != "" {
				t.Errorf("list_files %s differs from git ls-files (-git +list_files):\n%s", start, diff)
			}
		})
		t.Run("search "+start, func(t *testing.T) {
			obs := mustSucceed(t, callTool(t, rt, "search", map[string]any{"pattern": "needle", "path": start, "limit": 1000}))
			got := []string{}
			for _, m := range data(obs)["matches"].([]any) {
				got = append(got, fmt.Sprint(m.(map[string]any)["path"]))
			}
			var wantSearch []string
			for _, f := range under(want, start) {
				if !strings.HasSuffix(f, ".gitignore") {
					wantSearch = append(wantSearch, f)
				}
			}
			if diff := cmp.Diff(wantSearch, got); diff != "" {
				t.Errorf("search %s differs from git ls-files (-git +search):\n%s", start, diff)
			}
		})
	}
}

// under keeps the paths inside the directory start.
func under(paths []string, start string) []string {
	if start == "." {
		return paths
	}
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, start+"/") {
			out = append(out, p)
		}
	}
	return out
}
