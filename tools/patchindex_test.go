package tools

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitIndexes makes a repository whose index has a skip-worktree, an
// assume-unchanged and an intent-to-add entry, a symbolic link and an
// executable, and returns that index in versions 2, 3 and 4 with the
// entries parseIndex must keep ("<mode> <id> <path>", as ls-files -s
// prints them but for the stage).
func gitIndexes(t testing.TB) (map[int][]byte, []string) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, p := range []string{"a.txt", "b/c.txt", "b/d d.txt", "b/sparse.txt", "b/assumed.txt", "long/" + strings.Repeat("x", 200) + "/" + strings.Repeat("y", 200) + "/e.txt", "run.sh"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(p+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	run("init", "-q")
	run("add", ".")
	want := strings.Split(strings.TrimSpace(run("ls-files", "-s")), "\n")
	want = slices.DeleteFunc(want, func(l string) bool {
		return strings.HasSuffix(l, "sparse.txt") || strings.HasSuffix(l, "assumed.txt")
	})
	for i, l := range want {
		f := strings.Fields(l)
		want[i] = f[0] + " " + f[1] + " " + strings.SplitN(l, "\t", 2)[1]
	}
	run("update-index", "--skip-worktree", "b/sparse.txt")
	run("update-index", "--assume-unchanged", "b/assumed.txt")
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "-N", "new.txt")
	indexes := map[int][]byte{}
	for _, v := range []int{2, 3, 4} {
		run("update-index", "--index-version", string(rune('0'+v)))
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		indexes[v] = data
	}
	return indexes, want
}

// parseIndex reads git's own indexes, versions 2 to 4, and keeps only the
// plain entries; anything it does not understand is an error.
func TestParseIndex(t *testing.T) {
	t.Parallel()
	indexes, want := gitIndexes(t)
	for v, data := range indexes {
		entries, err := parseIndex(data)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, fmt.Sprintf("%o %x %s", binary.BigEndian.Uint32(e.stat[24:]), e.id, e.path))
		}
		if !slices.Equal(got, want) {
			t.Errorf("version %d:\ngot  %q\nwant %q", v, got, want)
		}
	}
	// Damaged or hostile: each is refused.
	data := indexes[2]
	resum := func(b []byte) []byte {
		b = slices.Clone(b[:len(b)-20])
		sum := sha1.Sum(b)
		return append(b, sum[:]...)
	}
	dotdot := resum([]byte(strings.Replace(string(data), "b/c.txt", "../c.tx", 1)))
	dotgit := resum([]byte(strings.Replace(string(data), "b/c.txt", ".git/cc", 1)))
	unsorted := resum([]byte(strings.Replace(string(data), "a.txt", "z.txt", 1)))
	version := resum(append([]byte("DIRC\x00\x00\x00\x05"), data[8:]...))
	flipped := slices.Clone(data)
	flipped[40] ^= 1
	for name, bad := range map[string][]byte{
		"truncated": resum(data[:len(data)/2]), "checksum": flipped, "..": dotdot, ".git": dotgit,
		"unsorted": unsorted, "version": version, "empty": nil, "header": []byte("DIRX" + string(data[4:])),
	} {
		if _, err := parseIndex(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzParseIndex: whatever the bytes, parseIndex returns or refuses
// without panicking, and every entry it returns has a clean path, no .git
// component, in strictly increasing order.
func FuzzParseIndex(f *testing.F) {
	indexes, _ := gitIndexes(f)
	for _, data := range indexes {
		f.Add(data)
		f.Add(data[:len(data)-20]) // no checksum: the last bytes are taken for one
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 32 { // a fuzzed index rarely has the right checksum: give it one
			sum := sha1.Sum(data[:len(data)-20])
			data = append(slices.Clone(data[:len(data)-20]), sum[:]...)
		}
		entries, err := parseIndex(data)
		if err != nil {
			return
		}
		prev := ""
		for _, e := range entries {
			if !cleanIndexPath(e.path) || e.path <= prev && prev != "" {
				t.Fatalf("entry %q after %q", e.path, prev)
			}
			prev = e.path
		}
	})
}
