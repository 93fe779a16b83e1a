package fswalk

import (
	"context"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// File is a regular file found by a walk. The visitor owns one reference
// to Dir and must release it.
type File struct {
	Rel  string // path relative to the root
	Name string // name in Dir
	Dir  *Dir
}

// ignoreFrame is the .gitignore of one directory; its patterns apply to
// paths relative to that directory, the later ones first.
type ignoreFrame struct {
	base  string // directory relative to the workspace, "" for the root
	rules []ignoreRule
}

// Walker visits the regular files under a directory of Root in path order,
// skipping .git, what .gitignore files ignore (each applies to its
// directory's subtree), symbolic links and special files. It reads at most
// MaxEntries directory entries, does not enter directories more than
// MaxDepth levels down and applies no .gitignore that would put more than
// MaxIgnoreLines patterns in effect; what it left out is recorded in its
// exported counters, for the caller's notes. A Walker walks once.
type Walker struct {
	Root           *os.Root
	Glob           *Glob // nil: every file
	MaxEntries     int
	MaxDepth       int
	MaxIgnoreLines int

	Capped      bool   // the walk stopped at MaxEntries
	Deep        int    // directories not entered for their depth
	FirstDeep   string // the first of them
	Unapplied   int    // .gitignore files not applied (MaxIgnoreLines)
	FirstIgnore string // the first of them

	seen int // directory entries read
}

// addIgnore parses the lines of the .gitignore of the directory base and
// adds it to frames, unless the patterns in effect would then pass
// wk.MaxIgnoreLines; rel is its path, for the note.
func (wk *Walker) addIgnore(frames []ignoreFrame, lines []string, base, rel string) []ignoreFrame {
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
	if n > wk.MaxIgnoreLines {
		if wk.Unapplied == 0 {
			wk.FirstIgnore = rel
		}
		wk.Unapplied++
		return frames
	}
	return append(frames[:len(frames):len(frames)], fr)
}

// Walk visits the files under the directory start (clean, relative to
// Root) until visit returns false or ctx is done. Its error is the one of
// opening start, or ctx's.
func (wk *Walker) Walk(ctx context.Context, start string, visit func(File) bool) error {
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
			d, err := openStart(wk.Root, dir)
			if err != nil {
				continue
			}
			if lines, ok := loadIgnore(d); ok {
				frames = wk.addIgnore(frames, lines, base, path.Join(dir, ".gitignore"))
			}
			d.Release()
		}
	}
	d, err := openStart(wk.Root, start)
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
func (wk *Walker) dir(ctx context.Context, d *Dir, rel string, depth int, frames []ignoreFrame, visit func(File) bool) bool {
	defer d.Release()
	if ctx.Err() != nil {
		return false
	}
	entries, more, err := d.entries(wk.MaxEntries - wk.seen)
	wk.seen += len(entries)
	if more {
		wk.Capped = true
	}
	if err != nil && len(entries) == 0 {
		return !wk.Capped
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
		if lines, ok := loadIgnore(d); ok {
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
			if wk.Capped {
				continue // the entry cap is reached: list only what was read
			}
			if depth == wk.MaxDepth {
				if wk.Deep == 0 {
					wk.FirstDeep = p
				}
				wk.Deep++
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
		if !wk.Glob.Match(p) {
			continue
		}
		d.acquire()
		if !visit(File{Rel: p, Name: e.name, Dir: d}) {
			return false
		}
	}
	return ctx.Err() == nil && !wk.Capped
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

// loadIgnore reads the lines of the .gitignore of the directory d; ok is
// false when there is none or it is not a readable regular file.
func loadIgnore(d *Dir) (lines []string, ok bool) {
	f, size, err := d.OpenFile(".gitignore")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if size > maxIgnoreSize {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreSize))
	if err != nil {
		return nil, false
	}
	return strings.Split(string(data), "\n"), true
}
