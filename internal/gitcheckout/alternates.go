package gitcheckout

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MaxAlternates bounds the object directories Alternates returns.
const MaxAlternates = 8

// maxAlternatesFile bounds what is read of an alternates file.
const maxAlternatesFile = 64 << 10

// Alternates returns the object directories outside the directory root,
// at the absolute path dir, that the repository whose top it is borrows:
// each line of its .git/objects/info/alternates (read through root, so
// never from outside it, and through no symbolic link) and of each of those directories' own
// info/alternates (one level deep), made absolute against the directory
// the file is in, with symbolic links resolved, that is a directory
// holding a pack directory and lies outside dir. What cannot be read or
// resolved is left out, and so are directories past MaxAlternates.
//
// It is what a run's sandbox lets commands read of another repository
// (sandbox.Policy.ObjectDirs): called once, when the run's workspace is
// opened, before any command could rewrite the file.
func Alternates(root *os.Root, dir string) []string {
	// No symbolic link on the way: a link a command or a file tool could
	// point at a file of the work tree would make its text the list.
	p := ""
	for _, name := range []string{".git", "objects", "info"} {
		p = filepath.Join(p, name)
		if fi, err := root.Lstat(p); err != nil || !fi.IsDir() {
			return nil
		}
	}
	p = filepath.Join(p, "alternates")
	fi, err := root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := root.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		return nil // swapped since it was looked at
	}
	data, _ := io.ReadAll(io.LimitReader(f, maxAlternatesFile))
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	var out []string
	add := func(d string) bool {
		if len(out) == MaxAlternates || slices.Contains(out, d) {
			return false
		}
		out = append(out, d)
		return true
	}
	for _, d := range alternateDirs(data, filepath.Join(dir, ".git", "objects")) {
		if inside(d, dir) || inside(d, realDir) || !add(d) {
			continue
		}
		nested, err := os.ReadFile(filepath.Join(d, "info", "alternates"))
		if err != nil {
			continue
		}
		if len(nested) > maxAlternatesFile {
			nested = nested[:maxAlternatesFile]
		}
		for _, n := range alternateDirs(nested, d) {
			if !inside(n, dir) && !inside(n, realDir) {
				add(n)
			}
		}
	}
	return out
}

// alternateDirs parses an alternates file of the object directory base:
// a path a line (quoted as git quotes it when it starts with a double
// quote), relative ones against base; comments and blank lines are
// skipped. It returns the paths with symbolic links resolved that are
// directories holding a pack directory.
func alternateDirs(data []byte, base string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			u, err := strconv.Unquote(line)
			if err != nil {
				continue
			}
			line = u
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(base, line)
		}
		real, err := filepath.EvalSymlinks(filepath.Clean(line))
		if err != nil || real == string(filepath.Separator) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(real, "pack")); err != nil || fi.Mode().Type() != fs.ModeDir {
			continue
		}
		out = append(out, real)
	}
	return out
}

// inside says whether the path p is dir or below it.
func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
