package tools_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Random trees under random .gitignore files built from the pattern forms
// git documents: list_files must list exactly what git lists.
func TestGitignoreRandomAgainstGit(t *testing.T) {
	t.Parallel()
	needGit(t)
	names := []string{"a", "b", "ab", "a.log", "b.txt", "c.o", "keep.log", "x y", "gen", "build"}
	dirs := []string{"", "a", "b", "a/b", "sub", "sub/a", "sub/deep/x", "gen", "b/gen/a"}
	pats := []string{"*.log", "!keep.log", "a", "/a", "a/", "!a", "b/", "!b.txt", "*.txt", "a/**", "**/a", "a/**/b",
		"sub/*", "!sub/a", "*", "!*/", "gen/", "!gen", "[ab]", "[!a]*", "?", "a*", "*b", "/sub/deep", "x\\ y", "x y  ", "!/b", "**/gen/**", "deep/", "*.o", "!c.o", "b/*.txt"}
	rng := rand.New(rand.NewPCG(8, 11))
	runs := 30
	if testing.Short() {
		runs = 10
	}
	for run := range runs {
		dir := t.TempDir()
		files := map[string]string{}
		for range 25 {
			d := dirs[rng.IntN(len(dirs))]
			files[filepath.Join(d, names[rng.IntN(len(names))])] = "n\n"
		}
		for _, d := range dirs {
			if rng.IntN(3) == 0 {
				continue
			}
			var lines []string
			for range 1 + rng.IntN(4) {
				lines = append(lines, pats[rng.IntN(len(pats))])
			}
			files[filepath.Join(d, ".gitignore")] = strings.Join(lines, "\n") + "\n"
		}
		// A file and a directory cannot share a name.
		for f := range files {
			for g := range files {
				if strings.HasPrefix(g, f+"/") {
					delete(files, f)
				}
			}
		}
		for f, c := range files {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The cases are drawn in order (one seed); git checks them in
		// parallel.
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			t.Parallel()
			compareWithGit(t, run, dir, files)
		})
	}
}

// compareWithGit fails when list_files in dir lists other files than git
// ls-files does.
func compareWithGit(t *testing.T, run int, dir string, files map[string]string) {
	git(t, dir, "init", "-q")
	want := gitListed(t, dir)
	if len(want) == 1 && want[0] == "" {
		want = nil
	}
	rt := wsRuntime(t, dir)
	obs := mustSucceed(t, callTool(t, rt, "list_files", map[string]any{"limit": 10000}))
	var got []string
	for _, f := range data(obs)["files"].([]any) {
		got = append(got, f.(string))
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		var ign []string
		for f, c := range files {
			if strings.HasSuffix(f, ".gitignore") {
				ign = append(ign, fmt.Sprintf("%s: %q", f, c))
			}
		}
		slices.Sort(ign)
		t.Errorf("run %d: list_files differs from git (-git +list_files):\n%s\nignores:\n%s", run, diff, strings.Join(ign, "\n"))
	}
}
