package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// walkFile is a regular file found by a walk. The visitor owns one reference
// to dir and must release it.
type walkFile struct {
	rel  string // workspace-relative path
	name string // name in dir
	dir  *dirHandle
}

// ignoreFrame is the .gitignore of one directory; its patterns apply to
// paths relative to that directory, the later ones first.
type ignoreFrame struct {
	base  string // directory relative to the workspace, "" for the root
	rules []ignoreRule
}

// walker visits the regular files under a directory of the workspace in
// path order, skipping .git, what .gitignore files ignore (each applies to
// its directory's subtree), symbolic links and special files. It reads at
// most walkMaxEntries directory entries and does not enter directories
// more than walkMaxDepth levels down; what it left out is recorded for the
// result's notes.
type walker struct {
	ws   *Workspace
	glob *glob

	seen      int    // directory entries read
	capped    bool   // the walk stopped at walkMaxEntries
	deep      int    // directories not entered for their depth
	firstDeep string // the first of them
	unapplied int    // .gitignore files not applied (walkMaxIgnoreLines)
	firstGi   string // the first of them
}

// addIgnore parses the lines of the .gitignore of the directory base and
// adds it to frames, unless the patterns in effect would then pass
// walkMaxIgnoreLines; rel is its path, for the note.
func (wk *walker) addIgnore(frames []ignoreFrame, lines []string, base, rel string) []ignoreFrame {
	fr := ignoreFrame{base: base}
	for _, l := range lines {
		if r, ok := parseIgnoreLine(l); ok {
			fr.rules = append(fr.rules, r)
		}
	}
	n := len(fr.rules)
	for _, f := range frames {
		n += len(f.rules)
	}
	if n > walkMaxIgnoreLines {
		if wk.unapplied == 0 {
			wk.firstGi = rel
		}
		wk.unapplied++
		return frames
	}
	return append(frames[:len(frames):len(frames)], fr)
}

// walk visits the files under the directory start (clean, relative) until
// visit returns false or ctx is done.
func (wk *walker) walk(ctx context.Context, start string, visit func(walkFile) bool) error {
	var frames []ignoreFrame
	// The .gitignore files of the directories above start apply too.
	if start != "." {
		parts := strings.Split(start, "/")
		for i := range parts {
			base := strings.Join(parts[:i], "/")
			dir := base
			if dir == "" {
				dir = "."
			}
			if lines, ok := loadIgnore(wk.ws.root, path.Join(dir, ".gitignore")); ok {
				frames = wk.addIgnore(frames, lines, base, path.Join(dir, ".gitignore"))
			}
		}
	}
	d, err := openStart(wk.ws.root, start)
	if err != nil {
		return err
	}
	prefix := start
	if start == "." {
		prefix = ""
	}
	wk.dir(ctx, d, prefix, 0, frames, visit)
	return ctx.Err()
}

// dir visits one directory (rel is its path, "" for the root; depth its
// level below the start) and releases the walk's reference to d. It
// returns false when the walk must stop. Only the directories on the path
// from the start to d are open: one descriptor per level.
func (wk *walker) dir(ctx context.Context, d *dirHandle, rel string, depth int, frames []ignoreFrame, visit func(walkFile) bool) bool {
	defer d.release()
	if ctx.Err() != nil {
		return false
	}
	entries, more, err := d.entries(walkMaxEntries - wk.seen)
	wk.seen += len(entries)
	if more {
		wk.capped = true
	}
	if err != nil && len(entries) == 0 {
		return !wk.capped
	}
	type entry struct {
		key  string // name, plus "/" for directories: sorting by it sorts by path
		name string
		dir  bool
	}
	list := make([]entry, 0, len(entries))
	hasIgnore := false
	for _, e := range entries {
		name := e.Name()
		t := e.Type()
		switch {
		case name == ".git":
			continue
		case t.IsDir():
			list = append(list, entry{key: name + "/", name: name, dir: true})
		case t.IsRegular():
			if name == ".gitignore" {
				hasIgnore = true
			}
			list = append(list, entry{key: name, name: name})
		}
	}
	entries = nil
	if hasIgnore {
		if lines, ok := loadIgnoreAt(d, ".gitignore"); ok {
			frames = wk.addIgnore(frames, lines, rel, path.Join(rel, ".gitignore"))
		}
	}
	slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range list {
		if ctx.Err() != nil {
			return false
		}
		p := e.name
		if rel != "" {
			p = rel + "/" + e.name
		}
		if ignored(frames, p, e.dir) {
			continue
		}
		if e.dir {
			if wk.capped {
				continue // the entry cap is reached: list only what was read
			}
			if depth == walkMaxDepth {
				if wk.deep == 0 {
					wk.firstDeep = p
				}
				wk.deep++
				continue
			}
			sd, err := d.openSub(e.name)
			if err != nil {
				continue
			}
			if !wk.dir(ctx, sd, p, depth+1, frames, visit) {
				return false
			}
			continue
		}
		if !wk.glob.match(p) {
			continue
		}
		d.acquire()
		if !visit(walkFile{rel: p, name: e.name, dir: d}) {
			return false
		}
	}
	return ctx.Err() == nil && !wk.capped
}

// notes describes what the walk left out, for a result's notes.
func (wk *walker) notes() []string {
	var ns []string
	if wk.capped {
		ns = append(ns, fmt.Sprintf("the walk stopped after %d entries (its cap); narrow it with path or glob", walkMaxEntries))
	}
	if wk.unapplied > 0 {
		ns = append(ns, fmt.Sprintf("%s not applied: with %s the .gitignore patterns in effect would pass %d (the first: %s); files they ignore may be listed", plural(wk.unapplied, ".gitignore file"), itOrThem(wk.unapplied), walkMaxIgnoreLines, quote(wk.firstGi)))
	}
	if wk.deep > 0 {
		ns = append(ns, fmt.Sprintf("%s more than %d levels deep %s not entered (the first: %s)", plural(wk.deep, "directory"), walkMaxDepth, isAre(wk.deep), quote(wk.firstDeep)))
	}
	return ns
}

func itOrThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func isAre(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// ignored reports whether the .gitignore files above p ignore it, as git
// decides: the last pattern that matches p itself wins, the deeper
// .gitignore over the one above it; a "!" pattern re-includes. The walk
// does not enter an ignored directory, so what is inside one stays ignored
// whatever a pattern re-includes, as in git.
func ignored(frames []ignoreFrame, p string, dir bool) bool {
	if len(frames) == 0 {
		return false
	}
	parts := strings.Split(p, "/")
	for i := len(frames) - 1; i >= 0; i-- {
		fr := frames[i]
		rel := parts
		if fr.base != "" {
			rel = parts[strings.Count(fr.base, "/")+1:]
		}
		for j := len(fr.rules) - 1; j >= 0; j-- {
			if m := fr.rules[j].match(rel, dir); m != gitignore.NoMatch {
				return m == gitignore.Exclude
			}
		}
	}
	return false
}

// maxIgnoreSize: larger .gitignore files are not read.
const maxIgnoreSize = 1 << 20

// loadIgnore reads the lines of a .gitignore; ok is false when there is
// none or it is not a readable regular file.
func loadIgnore(root *os.Root, name string) (lines []string, ok bool) {
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreSize {
		return nil, false
	}
	f, err := root.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreSize {
		return nil, false
	}
	return readIgnore(f)
}

// loadIgnoreAt is loadIgnore for the file name of the directory d.
func loadIgnoreAt(d *dirHandle, name string) (lines []string, ok bool) {
	f, size, err := d.openFile(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if size > maxIgnoreSize {
		return nil, false
	}
	return readIgnore(f)
}

// readIgnore reads the lines of the .gitignore f, at most maxIgnoreSize
// bytes of it.
func readIgnore(f io.Reader) ([]string, bool) {
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreSize))
	if err != nil {
		return nil, false
	}
	return strings.Split(string(data), "\n"), true
}
