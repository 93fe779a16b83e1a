package tools_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gitignoreTree is a workspace with nested .gitignore files, a .git
// directory and a binary file.
func gitignoreTree(t *testing.T) string {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".gitignore":          "*.log\nbuild/\n!keep.log\n",
		"a.go":                "package a // needle\n",
		"a/b.go":              "package b // needle\n",
		"a-b.txt":             "needle\n",
		"app.log":             "needle in a log\n",
		"keep.log":            "needle kept\n",
		"build/out.txt":       "needle built\n",
		"sub/.gitignore":      "secret.txt\n/local.txt\n",
		"sub/secret.txt":      "needle ignored by sub/.gitignore\n",
		"sub/local.txt":       "needle anchored ignore\n",
		"sub/deep/local.txt":  "needle not anchored here\n",
		"sub/deep/secret.txt": "needle ignored deeper too\n",
		"secret.txt":          "needle: sub/.gitignore does not apply here\n",
		".git/config":         "needle in git\n",
		"bin.dat":             "needle\x00binary\n",
	})
	return dir
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	dir := gitignoreTree(t)
	rt := wsRuntime(t, dir)
	all := []any{".gitignore", "a-b.txt", "a.go", "a/b.go", "bin.dat", "keep.log", "secret.txt", "sub/.gitignore", "sub/deep/local.txt"}
	tests := []struct {
		name      string
		args      map[string]any
		files     []any
		truncated bool
		code      string
	}{
		{name: "all, sorted by path, ignores applied", args: map[string]any{}, files: all},
		{name: "a subdirectory keeps the ignores above it", args: map[string]any{"path": "sub"}, files: []any{"sub/.gitignore", "sub/deep/local.txt"}},
		{name: "glob on names", args: map[string]any{"glob": "*.go"}, files: []any{"a.go", "a/b.go"}},
		{name: "glob on paths", args: map[string]any{"glob": "sub/**/*.txt"}, files: []any{"sub/deep/local.txt"}},
		{name: "limit", args: map[string]any{"limit": 2}, files: all[:2], truncated: true},
		{name: "limit equal to the count", args: map[string]any{"limit": len(all)}, files: all},
		{name: "a file", args: map[string]any{"path": "a.go"}, code: "not_a_directory"},
		{name: "missing", args: map[string]any{"path": "nope"}, code: "not_found"},
		{name: "bad glob", args: map[string]any{"glob": "[a"}, code: "invalid_glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := callTool(t, rt, "list_files", tt.args)
			if tt.code != "" {
				if code(obs) != tt.code {
					t.Fatalf("code %q (%s), want %s", code(obs), obs.Content, tt.code)
				}
				return
			}
			mustSucceed(t, obs)
			if diff := cmp.Diff(tt.files, data(obs)["files"]); diff != "" {
				t.Fatalf("files (-want +got):\n%s", diff)
			}
			if data(obs)["truncated"] != tt.truncated {
				t.Fatalf("truncated = %v", data(obs)["truncated"])
			}
			if tt.truncated && !strings.Contains(obs.Content, "cut at the limit") {
				t.Fatalf("the text does not say the list was cut: %s", obs.Content)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var long strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	writeFiles(t, dir, map[string]string{
		"three.txt": "one\ntwo\nthree",
		"crlf.txt":  "a\r\nb\r\n",
		"empty.txt": "",
		"long.txt":  long.String(),
		"wide.txt":  strings.Repeat("x", 10000) + "\nshort\n",
		"huge.txt":  strings.Repeat("y", 100000) + "\nnext\n",
		"bin.dat":   "\x7fELF\x00\x01",
		"d/x.txt":   "x\n",
	})
	rt := wsRuntime(t, dir)
	tests := []struct {
		name    string
		args    map[string]any
		content string
		start   float64
		end     float64
		total   float64
		next    any // next_start_line, nil when not truncated
		code    string
	}{
		{name: "whole file, last line without newline", args: map[string]any{"path": "three.txt"}, content: "1\tone\n2\ttwo\n3\tthree\n", start: 1, end: 3, total: 3},
		{name: "a range", args: map[string]any{"path": "three.txt", "start_line": 2, "end_line": 2}, content: "2\ttwo\n", start: 2, end: 2, total: 3},
		{name: "end past the end", args: map[string]any{"path": "three.txt", "start_line": 3, "end_line": 99}, content: "3\tthree\n", start: 3, end: 3, total: 3},
		{name: "CRLF", args: map[string]any{"path": "crlf.txt"}, content: "1\ta\n2\tb\n", start: 1, end: 2, total: 2},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, content: "", start: 1, end: 0, total: 0},
		{name: "capped at 2000 lines", args: map[string]any{"path": "long.txt"}, start: 1, end: 2000, total: 2500, next: 2001.0},
		{name: "the rest", args: map[string]any{"path": "long.txt", "start_line": 2001}, start: 2001, end: 2500, total: 2500},
		{name: "start past the end", args: map[string]any{"path": "three.txt", "start_line": 4}, code: "invalid_range"},
		{name: "end before start", args: map[string]any{"path": "three.txt", "start_line": 3, "end_line": 2}, code: "invalid_range"},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, code: "binary_file"},
		{name: "directory", args: map[string]any{"path": "d"}, code: "not_a_regular_file"},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, code: "not_found"},
		{name: "under a file", args: map[string]any{"path": "three.txt/x"}, code: "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := callTool(t, rt, "read_file", tt.args)
			if tt.code != "" {
				if code(obs) != tt.code {
					t.Fatalf("code %q (%s), want %s", code(obs), obs.Content, tt.code)
				}
				return
			}
			d := data(mustSucceed(t, obs))
			if tt.content != "" && d["content"] != tt.content {
				t.Fatalf("content %q, want %q", d["content"], tt.content)
			}
			got := []any{d["start_line"], d["end_line"], d["total_lines"], d["truncated"], d["next_start_line"]}
			want := []any{tt.start, tt.end, tt.total, tt.next != nil, tt.next}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("start, end, total, truncated, next (-want +got):\n%s", diff)
			}
			if tt.next != nil && !strings.Contains(obs.Content, fmt.Sprintf("start_line %v", tt.next)) {
				t.Fatalf("the text does not say how to read on: %s", obs.Content[len(obs.Content)-200:])
			}
		})
	}
	for _, name := range []string{"wide.txt", "huge.txt"} { // shorter and longer than the read buffer
		t.Run("long lines are clipped/"+name, func(t *testing.T) {
			d := data(mustSucceed(t, callTool(t, rt, "read_file", map[string]any{"path": name})))
			ls := lines(d["content"].(string))
			if len(ls) != 2 || d["total_lines"] != 2.0 || len(ls[0]) > 4100 || !strings.HasSuffix(ls[0], "more bytes]") {
				t.Fatalf("%d lines, line 1 is %d bytes: …%q", len(ls), len(ls[0]), ls[0][len(ls[0])-30:])
			}
		})
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		content  string
		old, new string
		code     string
		message  string // substring of the error or of the diff
		want     string // the file afterwards
	}{
		{name: "one occurrence", content: "a\nb\nc\n", old: "b\n", new: "B\nB2\n", want: "a\nB\nB2\nc\n", message: "-b\n+B\n+B2\n"},
		{name: "inside a line", content: "func f() { return 1 }\n", old: "return 1", new: "return 2", want: "func f() { return 2 }\n", message: "+func f() { return 2 }"},
		{name: "no occurrence", content: "a\nb\n", old: "zzz", code: "no_match", message: "No line resembles"},
		{name: "no occurrence, indentation differs", content: "func f() {\n\treturn 1\n}\n", old: "    return 1\n}", code: "no_match", message: "at line 2"},
		{name: "two occurrences", content: "x = 1\ny = 2\nx = 1\n", old: "x = 1", code: "multiple_matches", message: "occurs 2 times in f.txt (at lines 1, 3)"},
		{name: "overlapping occurrences", content: "aaa\n", old: "aa", code: "multiple_matches", message: "occurs 2 times"},
		{name: "many occurrences", content: strings.Repeat("x\n", 25), old: "x", code: "multiple_matches", message: "occurs 25 times"},
		{name: "binary", content: "a\x00b", old: "a", code: "binary_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"f.txt": tt.content})
			rt := wsRuntime(t, dir)
			obs := callTool(t, rt, "edit_file", map[string]any{"path": "f.txt", "old_text": tt.old, "new_text": tt.new})
			if tt.code != "" {
				if code(obs) != tt.code || !strings.Contains(obs.Content, tt.message) {
					t.Fatalf("got %q (%s), want %s containing %q", code(obs), obs.Content, tt.code, tt.message)
				}
				if got := readFile(t, filepath.Join(dir, "f.txt")); got != tt.content {
					t.Fatalf("a failed edit changed the file to %q", got)
				}
				return
			}
			d := data(mustSucceed(t, obs))
			if diff := d["diff"].(string); !strings.Contains(diff, tt.message) || !strings.HasPrefix(diff, "--- a/f.txt\n+++ b/f.txt\n") {
				t.Fatalf("diff %q lacks %q", diff, tt.message)
			}
			if got := readFile(t, filepath.Join(dir, "f.txt")); got != tt.want {
				t.Fatalf("file %q, want %q", got, tt.want)
			}
		})
	}
}

// The diff of an edit deep in a large file has the file's line numbers.
func TestEditFileDiffLineNumbers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFiles(t, dir, map[string]string{"f.txt": b.String()})
	rt := wsRuntime(t, dir)
	d := data(mustSucceed(t, callTool(t, rt, "edit_file", map[string]any{"path": "f.txt", "old_text": "line 50\n", "new_text": "line fifty\n"})))
	want := "--- a/f.txt\n+++ b/f.txt\n@@ -47,7 +47,7 @@\n line 47\n line 48\n line 49\n-line 50\n+line fifty\n line 51\n line 52\n line 53\n"
	if diff := cmp.Diff(want, d["diff"]); diff != "" {
		t.Fatalf("diff (-want +got):\n%s", diff)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"old.txt": "one\ntwo\n", "d/x": ""})
	if err := os.Symlink("old.txt", filepath.Join(dir, "inner-link")); err != nil {
		t.Fatal(err)
	}
	rt := wsRuntime(t, dir)

	d := data(mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "new/deep/file.txt", "content": "hello\n"})))
	if d["created"] != true || d["bytes"] != 6.0 || readFile(t, filepath.Join(dir, "new/deep/file.txt")) != "hello\n" {
		t.Fatalf("create: %v", d)
	}
	obs := mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "old.txt", "content": "one\n2\n"}))
	if d := data(obs); d["created"] != false || !strings.Contains(d["diff"].(string), "-two\n+2\n") {
		t.Fatalf("overwrite: %v", d)
	}
	for _, tt := range []struct{ path, code string }{
		{"d", "not_a_regular_file"},
		{"d/x/y", "not_a_regular_file"},
		{"inner-link", "not_a_regular_file"},
		{".", "not_a_regular_file"},
	} {
		obs := callTool(t, rt, "write_file", map[string]any{"path": tt.path, "content": "x"})
		if code(obs) != tt.code {
			t.Errorf("%s: code %q (%s), want %s", tt.path, code(obs), obs.Content, tt.code)
		}
	}
	if readFile(t, filepath.Join(dir, "old.txt")) != "one\n2\n" {
		t.Fatal("writing to the symlink changed its target")
	}
}

// Writes replace the file by a rename: a reader of the old file sees all of
// the old content, no temporary file is left behind and the mode is kept.
func TestWritesAreAtomic(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"write_file", "edit_file"} {
		t.Run(tool, func(t *testing.T) {
			dir := t.TempDir()
			old := strings.Repeat("old line\n", 10000)
			writeFiles(t, dir, map[string]string{"f.txt": old})
			if err := os.Chmod(filepath.Join(dir, "f.txt"), 0o640); err != nil {
				t.Fatal(err)
			}
			before, err := os.Open(filepath.Join(dir, "f.txt"))
			if err != nil {
				t.Fatal(err)
			}
			defer before.Close()
			rt := wsRuntime(t, dir)
			args := map[string]any{"path": "f.txt", "content": "new\n"}
			want := "new\n"
			if tool == "edit_file" {
				args = map[string]any{"path": "f.txt", "old_text": "old line\nold line\nold line\nold line\nold line\nold line\nold line\nold line\nold line\nold line\n", "new_text": "new\n"}
				want = ""
			}
			obs := callTool(t, rt, tool, args)
			if tool == "edit_file" {
				// The text occurs many times: refused; make it unique and retry.
				if code(obs) != "multiple_matches" {
					t.Fatalf("edit: %s", obs.Content)
				}
				args = map[string]any{"path": "f.txt", "old_text": old, "new_text": "new\n"}
				want = "new\n"
				obs = callTool(t, rt, tool, args)
			}
			mustSucceed(t, obs)
			if got := readFile(t, filepath.Join(dir, "f.txt")); got != want {
				t.Fatalf("file %q", got)
			}
			seen, err := io.ReadAll(before)
			if err != nil || string(seen) != old {
				t.Fatalf("the old file was changed in place (read %d bytes, %v)", len(seen), err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("temporary files left: %v", entries)
			}
			fi, _ := os.Stat(filepath.Join(dir, "f.txt"))
			if fi.Mode().Perm() != 0o640 {
				t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
			}
		})
	}
}
