package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/tools"
)

// patchResult decodes an apply_patch observation's structured result.
func patchResult(t *testing.T, obs gen.Observation) gen.ApplyPatchResult {
	t.Helper()
	var out gen.ApplyPatchResult
	if err := schema.Bind(data(mustSucceed(t, obs)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wsFiles is every regular file under dir, by slash path, with its content.
func wsFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, v := range snapshot(t, dir) {
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().IsRegular() {
			out[filepath.ToSlash(rel)] = v
		}
	}
	return out
}

func TestApplyPatchScenarios(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		before map[string]string
		patch  string
		after  map[string]string
		want   gen.ApplyPatchResult
	}{{
		name:  "add a file in a new directory",
		patch: "*** Begin Patch\n*** Add File: docs/new.md\n+# Title\n+\n+body\n*** End Patch\n",
		after: map[string]string{"docs/new.md": "# Title\n\nbody\n"},
		want:  gen.ApplyPatchResult{Added: []string{"docs/new.md"}},
	}, {
		name:   "delete a file",
		before: map[string]string{"keep.txt": "keep\n", "old.txt": "old\n"},
		patch:  "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
		after:  map[string]string{"keep.txt": "keep\n"},
		want:   gen.ApplyPatchResult{Deleted: []string{"old.txt"}},
	}, {
		name:   "update and move to a new directory",
		before: map[string]string{"old/name.txt": "one\ntwo\n", "old/other.txt": "other\n"},
		patch:  "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n one\n-two\n+2\n*** End Patch\n",
		after:  map[string]string{"renamed/dir/name.txt": "one\n2\n", "old/other.txt": "other\n"},
		want:   gen.ApplyPatchResult{Moved: []gen.ApplyPatchMove{{From: "old/name.txt", To: "renamed/dir/name.txt"}}},
	}, {
		name:   "move over an existing file",
		before: map[string]string{"a.txt": "a\n", "b.txt": "b\n"},
		patch:  "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n*** End Patch\n",
		after:  map[string]string{"b.txt": "A\n"},
		want:   gen.ApplyPatchResult{Moved: []gen.ApplyPatchMove{{From: "a.txt", To: "b.txt"}}},
	}, {
		name:   "several hunks and several files",
		before: map[string]string{"multi.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "gone.txt": "x\n"},
		patch: "*** Begin Patch\n*** Update File: multi.txt\n@@\n 1\n-2\n+two\n 3\n@@\n 7\n-8\n+eight\n 9\n" +
			"*** Delete File: gone.txt\n*** Add File: fresh.txt\n+fresh\n*** End Patch\n",
		after: map[string]string{"multi.txt": "1\ntwo\n3\n4\n5\n6\n7\neight\n9\n", "fresh.txt": "fresh\n"},
		want:  gen.ApplyPatchResult{Added: []string{"fresh.txt"}, Updated: []string{"multi.txt"}, Deleted: []string{"gone.txt"}},
	}, {
		name:   "pure addition without context appends",
		before: map[string]string{"f.txt": "a\nb\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@\n+c\n+d\n*** End Patch\n",
		after:  map[string]string{"f.txt": "a\nb\nc\nd\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "pure addition after an @@ context line",
		before: map[string]string{"f.go": "func a() {\n}\nfunc b() {\n}\n"},
		patch:  "*** Begin Patch\n*** Update File: f.go\n@@ func a() {\n+\t// in a\n*** End Patch\n",
		after:  map[string]string{"f.go": "func a() {\n\t// in a\n}\nfunc b() {\n}\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.go"}},
	}, {
		name:   "the @@ line picks the right occurrence",
		before: map[string]string{"f.py": "def a():\n    return 1\ndef b():\n    return 1\n"},
		patch:  "*** Begin Patch\n*** Update File: f.py\n@@ def b():\n-    return 1\n+    return 2\n*** End Patch\n",
		after:  map[string]string{"f.py": "def a():\n    return 1\ndef b():\n    return 2\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.py"}},
	}, {
		name:   "deletion-only hunk",
		before: map[string]string{"lines.txt": "line1\nline2\nline3\n"},
		patch:  "*** Begin Patch\n*** Update File: lines.txt\n@@\n line1\n-line2\n line3\n*** End Patch\n",
		after:  map[string]string{"lines.txt": "line1\nline3\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"lines.txt"}},
	}, {
		name:   "delete every line",
		before: map[string]string{"f.txt": "only\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@\n-only\n*** End Patch\n",
		after:  map[string]string{"f.txt": ""},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "end of file picks the last occurrence",
		before: map[string]string{"tail.txt": "x\ny\nx\ny\n"},
		patch:  "*** Begin Patch\n*** Update File: tail.txt\n@@\n x\n-y\n+z\n*** End of File\n*** End Patch\n",
		after:  map[string]string{"tail.txt": "x\ny\nx\nz\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"tail.txt"}},
	}, {
		name:   "pure addition at the end of file",
		before: map[string]string{"f.txt": "a\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@ a\n+b\n*** End of File\n*** End Patch\n",
		after:  map[string]string{"f.txt": "a\nb\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "unicode",
		before: map[string]string{"uni.txt": "héllo wörld\n日本語のテキスト\n— ü —\n"},
		patch:  "*** Begin Patch\n*** Update File: uni.txt\n@@\n héllo wörld\n-日本語のテキスト\n+中文文本 🎉\n — ü —\n*** End Patch\n",
		after:  map[string]string{"uni.txt": "héllo wörld\n中文文本 🎉\n— ü —\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"uni.txt"}},
	}, {
		name:   "a file without a trailing newline gets one",
		before: map[string]string{"no_newline.txt": "a\nb"},
		patch:  "*** Begin Patch\n*** Update File: no_newline.txt\n@@\n a\n-b\n+c\n*** End Patch\n",
		after:  map[string]string{"no_newline.txt": "a\nc\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"no_newline.txt"}},
	}, {
		name:   "a patch without a trailing newline",
		before: map[string]string{"f.txt": "a\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch",
		after:  map[string]string{"f.txt": "b\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "whitespace-padded markers",
		before: map[string]string{"file.txt": "one\n"},
		patch:  "\n  *** Begin Patch  \n  *** Update File: file.txt  \n  @@  \n-one\n+two\n *** End Patch \n\n",
		after:  map[string]string{"file.txt": "two\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"file.txt"}},
	}, {
		name:   "padded operation headers after a hunk",
		before: map[string]string{"a.txt": "a\n", "b.txt": "b\n"},
		patch:  "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n   *** Update File: b.txt\n  @@\n-b\n+B\n  *** Add File: c.txt\n+c\n*** End Patch\n",
		after:  map[string]string{"a.txt": "A\n", "b.txt": "B\n", "c.txt": "c\n"},
		want:   gen.ApplyPatchResult{Added: []string{"c.txt"}, Updated: []string{"a.txt", "b.txt"}},
	}, {
		name:   "a Markdown rule as the first context line",
		before: map[string]string{"doc.md": "# Title\n***\nold\n"},
		patch:  "*** Begin Patch\n*** Update File: doc.md\n ***\n-old\n+new\n*** End Patch\n",
		after:  map[string]string{"doc.md": "# Title\n***\nnew\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"doc.md"}},
	}, {
		name:   "context matched ignoring trailing white space",
		before: map[string]string{"f.txt": "foo   \nbar\t\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@\n foo\n-bar\n+baz\n*** End Patch\n",
		after:  map[string]string{"f.txt": "foo   \nbaz\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "context matched ignoring leading white space",
		before: map[string]string{"f.py": "if x:\n        y = 1\n"},
		patch:  "*** Begin Patch\n*** Update File: f.py\n@@\n if x:\n-    y = 1\n+    y = 2\n*** End Patch\n",
		after:  map[string]string{"f.py": "if x:\n    y = 2\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.py"}},
	}, {
		name:   "an exact match wins over a looser earlier one",
		before: map[string]string{"f.txt": "  a\nb\na\nb\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@\n a\n-b\n+B\n*** End Patch\n",
		after:  map[string]string{"f.txt": "  a\nb\na\nB\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "CRLF file keeps its line ends",
		before: map[string]string{"win.txt": "a\r\nb\r\n"},
		patch:  "*** Begin Patch\n*** Update File: win.txt\n@@\n a\n-b\n+c\n*** End Patch\n",
		after:  map[string]string{"win.txt": "a\r\nc\r\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"win.txt"}},
	}, {
		name:   "blank line before the next hunk",
		before: map[string]string{"f.txt": "a\nb\nc\nd\n"},
		patch:  "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+A\n\n@@\n-d\n+D\n*** End Patch\n",
		after:  map[string]string{"f.txt": "A\nb\nc\nD\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.txt"}},
	}, {
		name:   "first hunk without @@",
		before: map[string]string{"f.py": "import foo\n"},
		patch:  "*** Begin Patch\n*** Update File: f.py\n import foo\n+bar\n*** End Patch\n",
		after:  map[string]string{"f.py": "import foo\nbar\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"f.py"}},
	}, {
		name:   "add over an existing file replaces it",
		before: map[string]string{"dup.txt": "old\n"},
		patch:  "*** Begin Patch\n*** Add File: dup.txt\n+new\n*** End Patch\n",
		after:  map[string]string{"dup.txt": "new\n"},
		want:   gen.ApplyPatchResult{Updated: []string{"dup.txt"}},
	}, {
		name:  "add then update the same file",
		patch: "*** Begin Patch\n*** Add File: n.txt\n+a\n*** Update File: n.txt\n@@\n-a\n+b\n*** End Patch\n",
		after: map[string]string{"n.txt": "b\n"},
		want:  gen.ApplyPatchResult{Added: []string{"n.txt"}},
	}, {
		name:  "add an empty file",
		patch: "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n",
		after: map[string]string{"empty.txt": ""},
		want:  gen.ApplyPatchResult{Added: []string{"empty.txt"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.before)
			rt := wsRuntime(t, dir)
			got := patchResult(t, callTool(t, rt, "apply_patch", map[string]any{"patch": tc.patch}))
			for _, l := range []*[]string{&tc.want.Added, &tc.want.Updated, &tc.want.Deleted} {
				if *l == nil {
					*l = []string{}
				}
			}
			if tc.want.Moved == nil {
				tc.want.Moved = []gen.ApplyPatchMove{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.after, wsFiles(t, dir)); diff != "" {
				t.Errorf("workspace after the patch (-want +got):\n%s", diff)
			}
		})
	}
}

// A patch whose files change modes keeps the mode of an updated or moved
// file.
func TestApplyPatchKeepsMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"run.sh": "echo a\n"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := wsRuntime(t, dir)
	mustSucceed(t, callTool(t, rt, "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo a\n+echo b\n*** End Patch\n"}))
	fi, err := os.Stat(filepath.Join(dir, "bin", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("moved file's mode is %v, want 0755", fi.Mode().Perm())
	}
}

// Every failure leaves every file as it was, whatever the earlier
// operations of the patch did, and the error names the code, the file and
// the hunk.
func TestApplyPatchAllOrNothing(t *testing.T) {
	t.Parallel()
	before := map[string]string{
		"a.txt":      "a1\na2\na3\n",
		"b.txt":      "b1\nb2\nb3\nb4\nb5\n",
		"c.txt":      "c\n",
		"bin.dat":    "\x00\x01\x02binary",
		"tail.txt":   "x\ny\nz\n",
		"dir/in.txt": "in\n",
	}
	// Earlier operations that would change a, c and create new.txt.
	const prefix = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+A1\n*** Delete File: c.txt\n*** Add File: new.txt\n+new\n"
	cases := []struct {
		name, patch string
		code        gen.ErrorCode
		mention     []string
	}{
		{"a later hunk does not match", prefix + "*** Update File: b.txt\n@@\n b1\n-b2\n+B2\n@@\n-not there\n+x\n*** End Patch\n",
			gen.ErrorCodePatchConflict, []string{`"b.txt"`, "hunk 2", "no file was changed"}},
		{"an @@ line does not occur", prefix + "*** Update File: b.txt\n@@ func missing()\n-b2\n+B2\n*** End Patch\n",
			gen.ErrorCodePatchConflict, []string{`"b.txt"`, "hunk 1", "func missing()"}},
		{"end of file does not match", prefix + "*** Update File: tail.txt\n@@\n-y\n+Y\n*** End of File\n*** End Patch\n",
			gen.ErrorCodePatchConflict, []string{`"tail.txt"`, "hunk 1", "end of the file"}},
		{"updating a missing file", prefix + "*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n",
			gen.ErrorCodeNotFound, []string{`"missing.txt"`}},
		{"deleting a missing file", prefix + "*** Delete File: missing.txt\n*** End Patch\n",
			gen.ErrorCodeNotFound, []string{`"missing.txt"`}},
		{"deleting twice", prefix + "*** Delete File: c.txt\n*** End Patch\n",
			gen.ErrorCodeNotFound, []string{`"c.txt"`}},
		{"a binary file", prefix + "*** Update File: bin.dat\n@@\n-x\n+y\n*** End Patch\n",
			gen.ErrorCodeBinaryFile, []string{`"bin.dat"`}},
		{"updating a directory", prefix + "*** Update File: dir\n@@\n-x\n+y\n*** End Patch\n",
			gen.ErrorCodeNotARegularFile, []string{`"dir"`}},
		{"a file and a directory at once", prefix + "*** Add File: new.txt/inner\n+x\n*** End Patch\n",
			gen.ErrorCodeInvalidPatch, []string{`"new.txt"`}},
		{"a later syntax error", prefix + "*** Update File: b.txt\n@@\n-b1\n+B1\n*** Frobnicate: b.txt\n*** End Patch\n",
			gen.ErrorCodeInvalidPatch, []string{"line 13", "Frobnicate"}},
		{"a later path outside", prefix + "*** Add File: ../out.txt\n+x\n*** End Patch\n",
			gen.ErrorCodeOutsideWorkspace, nil},
		{"a later move outside", prefix + "*** Update File: b.txt\n*** Move to: ../b.txt\n@@\n-b1\n+B1\n*** End Patch\n",
			gen.ErrorCodeOutsideWorkspace, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "ws")
			writeFiles(t, dir, before)
			rt := wsRuntime(t, dir)
			snap := snapshot(t, base)
			obs := callTool(t, rt, "apply_patch", map[string]any{"patch": tc.patch})
			if !obs.IsError || code(obs) != string(tc.code) {
				t.Fatalf("got %s %q, want the error %s", code(obs), obs.Content, tc.code)
			}
			for _, m := range tc.mention {
				if !strings.Contains(obs.Content, m) {
					t.Errorf("the error %q does not mention %q", obs.Content, m)
				}
			}
			if diff := cmp.Diff(snap, snapshot(t, base)); diff != "" {
				t.Errorf("a failed patch changed files (-before +after):\n%s", diff)
			}
			if p, err := rt.Patch(t.Context()); err != nil || p != "" {
				t.Errorf("the run's patch after a failed apply_patch: %q, %v", p, err)
			}
		})
	}
}

func TestApplyPatchInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, patch, mention string }{
		{"no begin marker", "*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n", "*** Begin Patch"},
		{"no end marker", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n", "*** End Patch"},
		{"no operation", "*** Begin Patch\n*** End Patch\n", "no file operation"},
		{"an update without hunks", "*** Begin Patch\n*** Update File: a.txt\n*** End Patch\n", "has no hunk"},
		{"a hunk line without a prefix", "*** Begin Patch\n*** Update File: a.txt\n@@\nbare line\n*** End Patch\n", "line 4"},
		{"an empty hunk", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n@@\n*** End Patch\n", "no lines"},
		{"a second hunk without @@", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End of File\n-x\n*** End Patch\n", "@@"},
		{"no path", "*** Begin Patch\n*** Add File: \n+x\n*** End Patch\n", "no path"},
		{"a unified diff", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n", "*** Begin Patch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.txt": "a\n"})
			rt := wsRuntime(t, dir)
			obs := callTool(t, rt, "apply_patch", map[string]any{"patch": tc.patch})
			if code(obs) != string(gen.ErrorCodeInvalidPatch) {
				t.Fatalf("got %s %q, want invalid_patch", code(obs), obs.Content)
			}
			if !strings.Contains(obs.Content, tc.mention) {
				t.Errorf("the error %q does not mention %q", obs.Content, tc.mention)
			}
			if got := readFile(t, filepath.Join(dir, "a.txt")); got != "a\n" {
				t.Errorf("a.txt changed to %q", got)
			}
		})
	}
}

// Every way out of the workspace, into its git metadata or through a hard
// link is refused, and nothing outside (or inside) changes.
func TestApplyPatchEscapes(t *testing.T) {
	t.Parallel()
	base, ws, _ := escapeFixture(t)
	writeFiles(t, ws, map[string]string{".git/config": "[core]\n", "sub/.GIT/hooks/x": "x\n"})
	if err := os.Link(filepath.Join(base, "outside", "secret.txt"), filepath.Join(ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(ws, "gitlink")); err != nil {
		t.Fatal(err)
	}
	rt := wsRuntime(t, ws)
	before := snapshot(t, base)
	cases := []struct {
		name, patch string
		codes       []gen.ErrorCode
	}{
		{"add above the root", "*** Add File: ../outside/new.txt\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"delete above the root", "*** Delete File: ../outside/secret.txt", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"update above the root", "*** Update File: sub/../../outside/secret.txt\n@@\n-" + outsideSecret + "\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"absolute add", "*** Add File: " + filepath.Join(base, "outside", "abs.txt") + "\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"absolute update", "*** Update File: /etc/passwd\n@@\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"add through a symlinked directory", "*** Add File: link-dir/new.txt\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"add through a symlinked parent", "*** Add File: sub/up/new.txt\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"update a symlink to an outside file", "*** Update File: link-file\n@@\n-" + outsideSecret + "\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace, gen.ErrorCodeNotARegularFile}},
		{"delete an absolute symlink", "*** Delete File: abs-link-file", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"move out through a symlink", "*** Update File: sub/keep.txt\n*** Move to: link-dir/moved.txt\n@@\n-keep\n+moved", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"move above the root", "*** Update File: sub/keep.txt\n*** Move to: ../moved.txt\n@@\n-keep\n+moved", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{".git/config", "*** Update File: .git/config\n@@\n-[core]\n+[core]\n+\thooksPath = /tmp", []gen.ErrorCode{gen.ErrorCodeProtectedPath}},
		{"add a git hook", "*** Add File: .git/hooks/pre-commit\n+#!/bin/sh", []gen.ErrorCode{gen.ErrorCodeProtectedPath}},
		{"a .GIT in another case", "*** Delete File: sub/.GIT/hooks/x", []gen.ErrorCode{gen.ErrorCodeProtectedPath}},
		{"git through a symlink", "*** Add File: gitlink/hooks/post-checkout\n+#!/bin/sh", []gen.ErrorCode{gen.ErrorCodeProtectedPath}},
		{"move into .git", "*** Update File: sub/keep.txt\n*** Move to: .git/config\n@@\n-keep\n+[core]", []gen.ErrorCode{gen.ErrorCodeProtectedPath}},
		{"a hard link", "*** Update File: hard.txt\n@@\n-" + outsideSecret + "\n+x", []gen.ErrorCode{gen.ErrorCodeHardLink}},
		{"delete a hard link", "*** Delete File: hard.txt", []gen.ErrorCode{gen.ErrorCodeHardLink}},
		{"a FIFO", "*** Update File: fifo\n@@\n+x", []gen.ErrorCode{gen.ErrorCodeNotARegularFile}},
		{"a symlink loop", "*** Add File: loop/x\n+x", []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace}},
		{"a newline in a name", "*** Add File: a\tb\n+x", []gen.ErrorCode{gen.ErrorCodeInvalidPath}},
		{"the root", "*** Delete File: .", []gen.ErrorCode{gen.ErrorCodeNotARegularFile}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A valid change first: the refusal must undo nothing, since
			// nothing was written.
			patch := "*** Begin Patch\n*** Update File: ok.txt\n@@\n-fine\n+changed\n" + tc.patch + "\n*** End Patch\n"
			obs := callTool(t, rt, "apply_patch", map[string]any{"patch": patch})
			if !obs.IsError || !containsCode(tc.codes, code(obs)) {
				t.Fatalf("got %s %q, want one of %v", code(obs), obs.Content, tc.codes)
			}
			if strings.Contains(obs.Content, outsideSecret) {
				t.Fatalf("the error leaks outside content: %q", obs.Content)
			}
			if diff := cmp.Diff(before, snapshot(t, base)); diff != "" {
				t.Fatalf("a refused patch changed files (-before +after):\n%s", diff)
			}
		})
	}
}

func containsCode(codes []gen.ErrorCode, c string) bool {
	for _, x := range codes {
		if string(x) == c {
			return true
		}
	}
	return false
}

// The run's patch (Runtime.Patch) includes what apply_patch changed.
func TestApplyPatchInRunPatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "a\n", "gone.txt": "g\n"})
	rt := wsRuntime(t, dir)
	mustSucceed(t, callTool(t, rt, "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Delete File: gone.txt\n*** Add File: n.txt\n+n\n*** End Patch\n"}))
	p, err := rt.Patch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-a\n+b\n", "+++ b/n.txt", "--- a/gone.txt"} {
		if !strings.Contains(p, want) {
			t.Errorf("the run's patch lacks %q:\n%s", want, p)
		}
	}
}

// The search for hunks is bounded for a whole patch, not per operation:
// a patch that repeats an expensive but matching operation on one file
// would otherwise buy patchfmt.MaxSeekWork comparisons for every few KiB
// of patch (minutes of CPU for the 4 MiB a patch may have).
func TestApplyPatchBoundsSearchPerPatch(t *testing.T) {
	t.Parallel()
	rt, patch := repeatedOps(t, t.TempDir())
	mustSucceed(t, callTool(t, rt, "apply_patch", map[string]any{"patch": patch(1)}))
	obs := callTool(t, rt, "apply_patch", map[string]any{"patch": patch(3)})
	if code(obs) != string(gen.ErrorCodePatchConflict) || !strings.Contains(obs.Content, "gave up") {
		t.Fatalf("3 operations of ~19M comparisons each: got %s %.300q, want a conflict that gave up", code(obs), obs.Content)
	}
}

// repeatedOps is a runtime on dir with a file of 20,000 lines "a" and a
// "b", and the patch of n operations that each match there after ~19M
// line comparisons (and change nothing).
func repeatedOps(tb testing.TB, dir string) (*tools.Runtime, func(n int) string) {
	const lines, hunk = 20_000, 1000
	writeFiles(tb, dir, map[string]string{"f.txt": strings.Repeat("a\n", lines) + "b\n"})
	op := "*** Update File: f.txt\n@@\n" + strings.Repeat(" a\n", hunk) + "-b\n+b\n"
	return wsRuntime(tb, dir), func(n int) string { return "*** Begin Patch\n" + strings.Repeat(op, n) + "*** End Patch\n" }
}

// BenchmarkApplyPatchRepeatedOps is the cost of a patch of 100 such
// operations (300 KiB): the patch's one search budget, then a conflict.
func BenchmarkApplyPatchRepeatedOps(b *testing.B) {
	rt, patch := repeatedOps(b, b.TempDir())
	args := map[string]any{"patch": patch(100)}
	for b.Loop() {
		callTool(b, rt, "apply_patch", args)
	}
}
