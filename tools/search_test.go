package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func matchesOf(t *testing.T, d map[string]any) []string {
	t.Helper()
	var out []string
	for _, m := range d["matches"].([]any) {
		m := m.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%v:%s", m["path"], m["line"], m["text"]))
	}
	return out
}

func TestSearch(t *testing.T) {
	t.Parallel()
	dir := gitignoreTree(t)
	writeFiles(t, dir, map[string]string{
		"code/x.go":    "package x\n\nfunc Alpha() {}\nfunc beta(n int) {}\n",
		"code/y.go":    "package y\nvar Needle = 1\n",
		"code/long.go": "// " + strings.Repeat("a", 2000) + " needle " + strings.Repeat("b", 2000) + "\n",
	})
	rt := wsRuntime(t, dir)
	tests := []struct {
		name      string
		args      map[string]any
		want      []string
		truncated bool
		code      string
		message   string
	}{
		{name: "literal, ignores applied, binary and .git skipped", args: map[string]any{"pattern": "needle", "glob": "*.txt"},
			want: []string{"a-b.txt:1:needle", "secret.txt:1:needle: sub/.gitignore does not apply here", "sub/deep/local.txt:1:needle not anchored here"}},
		{name: "literal is case-sensitive", args: map[string]any{"pattern": "Needle"}, want: []string{"code/y.go:2:var Needle = 1"}},
		{name: "ignore case", args: map[string]any{"pattern": "NEEDLE =", "ignore_case": true}, want: []string{"code/y.go:2:var Needle = 1"}},
		{name: "regular expression", args: map[string]any{"pattern": `^func \w+\(`, "regex": true},
			want: []string{"code/x.go:3:func Alpha() {}", "code/x.go:4:func beta(n int) {}"}},
		{name: "literal metacharacters", args: map[string]any{"pattern": "beta(n"}, want: []string{"code/x.go:4:func beta(n int) {}"}},
		{name: "a file named explicitly is searched even when ignored", args: map[string]any{"pattern": "needle", "path": "app.log"},
			want: []string{"app.log:1:needle in a log"}},
		{name: "a directory", args: map[string]any{"pattern": "needle", "path": "a"}, want: []string{"a/b.go:1:package b // needle"}},
		{name: "glob with a path", args: map[string]any{"pattern": "package", "glob": "code/**/*.go", "limit": 1},
			want: []string{"code/x.go:1:package x"}, truncated: true},
		{name: "long lines are clipped around the match", args: map[string]any{"pattern": "needle", "path": "code/long.go"},
			want: []string{"code/long.go:1:…" + strings.Repeat("a", 74) + " needle " + strings.Repeat("b", 300-74-8) + "…"}},
		{name: "no match", args: map[string]any{"pattern": "absent"}, want: nil, message: "no matches"},
		{name: "invalid regular expression", args: map[string]any{"pattern": "a(b", "regex": true}, code: "invalid_regex", message: "missing closing )"},
		{name: "missing path", args: map[string]any{"pattern": "x", "path": "nope"}, code: "not_found"},
		{name: "bad glob", args: map[string]any{"pattern": "x", "glob": "[x"}, code: "invalid_glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := callTool(t, rt, "search", tt.args)
			if tt.code != "" {
				if code(obs) != tt.code || !strings.Contains(obs.Content, tt.message) {
					t.Fatalf("got %q (%s), want %s with %q", code(obs), obs.Content, tt.code, tt.message)
				}
				return
			}
			d := data(mustSucceed(t, obs))
			if diff := cmp.Diff(tt.want, matchesOf(t, d)); diff != "" {
				t.Fatalf("matches (-want +got):\n%s", diff)
			}
			if d["truncated"] != tt.truncated || !strings.Contains(obs.Content, tt.message) {
				t.Fatalf("truncated %v, content %q", d["truncated"], obs.Content)
			}
		})
	}
}

// Results come in path order, and the limit takes the first ones, however
// the parallel workers finish.
func TestSearchOrderAndLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	var want []string
	for i := range 300 {
		name := fmt.Sprintf("d%d/f%03d.txt", i%7, i)
		var b strings.Builder
		for j := 1; j <= 1+i%3; j++ {
			fmt.Fprintf(&b, "filler\nhit %d %d\n", i, j)
		}
		files[name] = b.String()
	}
	writeFiles(t, dir, files)
	// The expected order: by path, then line.
	for d := range 7 {
		for i := range 300 {
			if i%7 != d {
				continue
			}
			for j := 1; j <= 1+i%3; j++ {
				want = append(want, fmt.Sprintf("d%d/f%03d.txt:%d:hit %d %d", d, i, 2*j, i, j))
			}
		}
	}
	rt := wsRuntime(t, dir)
	for _, limit := range []int{1, 7, 100, len(want), 10000} {
		d := data(mustSucceed(t, callTool(t, rt, "search", map[string]any{"pattern": "hit", "limit": limit})))
		n := min(limit, len(want))
		if diff := cmp.Diff(want[:n], matchesOf(t, d)); diff != "" {
			t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
		}
		if d["truncated"] != (limit < len(want)) {
			t.Fatalf("limit %d: truncated %v", limit, d["truncated"])
		}
	}
}
