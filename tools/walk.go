package tools

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	ignore "github.com/sabhiram/go-gitignore"
	"golang.org/x/sys/unix"
)

// dirHandle is an open directory of the workspace, shared by the files of
// it that are being visited; it is closed when the last user releases it.
// Its files are opened relative to it: one openat each, instead of one per
// path component.
type dirHandle struct {
	root *os.Root // for subdirectories
	dir  *os.File // the directory itself, opened through root
	refs atomic.Int32
}

// openDir opens a directory handle on root.
func openDir(root *os.Root) (*dirHandle, error) {
	f, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, err
	}
	d := &dirHandle{root: root, dir: f}
	d.refs.Store(1)
	return d, nil
}

func (d *dirHandle) acquire() { d.refs.Add(1) }

func (d *dirHandle) release() {
	if d.refs.Add(-1) == 0 {
		d.dir.Close()
		d.root.Close()
	}
}

// entries lists the directory. os.File.ReadDir on a directory opened
// through an os.Root stats every entry (one system call each); a duplicate
// of the descriptor, as a plain file, reads the types from the directory
// itself.
func (d *dirHandle) entries() ([]fs.DirEntry, error) {
	rc, err := d.dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup int
	var dupErr error
	if err := rc.Control(func(fd uintptr) { dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	f := os.NewFile(uintptr(dup), d.dir.Name())
	defer f.Close()
	return f.ReadDir(-1)
}

// openFile opens the regular file name of the directory for reading: a
// single path component, never following a symbolic link and never
// blocking on a FIFO or a device, so it cannot leave the directory. It
// returns the descriptor and the file's size.
func (d *dirHandle) openFile(name string) (fd int, size int64, err error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return -1, 0, fs.ErrInvalid
	}
	rc, err := d.dir.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var openErr error
	if err := rc.Control(func(dirfd uintptr) {
		fd, openErr = unix.Openat(int(dirfd), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	}); err != nil {
		return -1, 0, err
	}
	if openErr != nil {
		return -1, 0, openErr
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, fs.ErrInvalid
	}
	return fd, st.Size, nil
}

// walkFile is a regular file found by a walk. The visitor owns one reference
// to dir and must release it.
type walkFile struct {
	rel  string // workspace-relative path
	name string // name in dir
	dir  *dirHandle
}

// ignoreFrame is the .gitignore of one directory; its patterns apply to
// paths relative to that directory.
type ignoreFrame struct {
	base string // directory relative to the workspace, "" for the root
	gi   *ignore.GitIgnore
}

// walker visits the regular files under a directory of the workspace in
// path order, skipping .git, what .gitignore files ignore (each applies to
// its directory's subtree), symbolic links and special files.
type walker struct {
	ws   *Workspace
	glob *glob
}

// walk visits the files under the directory start (clean, relative) until
// visit returns false or ctx is done.
func (wk *walker) walk(ctx context.Context, start string, visit func(walkFile) bool) error {
	dr, err := wk.ws.root.OpenRoot(start)
	if err != nil {
		return err
	}
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
			if gi := loadIgnore(wk.ws.root, path.Join(dir, ".gitignore")); gi != nil {
				frames = append(frames, ignoreFrame{base: base, gi: gi})
			}
		}
	}
	d, err := openDir(dr)
	if err != nil {
		return err
	}
	prefix := start
	if start == "." {
		prefix = ""
	}
	wk.dir(ctx, d, prefix, frames, visit)
	return ctx.Err()
}

// dir visits one directory (rel is its path, "" for the root) and releases
// the walk's reference to d. It returns false when the walk must stop.
func (wk *walker) dir(ctx context.Context, d *dirHandle, rel string, frames []ignoreFrame, visit func(walkFile) bool) bool {
	defer d.release()
	if ctx.Err() != nil {
		return false
	}
	entries, err := d.entries()
	if err != nil && len(entries) == 0 {
		return true
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
	if hasIgnore {
		if gi := loadIgnore(d.root, ".gitignore"); gi != nil {
			frames = append(frames[:len(frames):len(frames)], ignoreFrame{base: rel, gi: gi})
		}
	}
	slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range list {
		p := e.name
		if rel != "" {
			p = rel + "/" + e.name
		}
		if ignored(frames, p, e.dir) {
			continue
		}
		if e.dir {
			sub, err := d.root.OpenRoot(e.name)
			if err != nil {
				continue
			}
			sd, err := openDir(sub)
			if err != nil {
				continue
			}
			if !wk.dir(ctx, sd, p, frames, visit) {
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
	return ctx.Err() == nil
}

// ignored reports whether a .gitignore above p ignores it. Directories are
// matched with a trailing slash, so "build/" patterns apply to them.
func ignored(frames []ignoreFrame, p string, dir bool) bool {
	for _, fr := range frames {
		r := p
		if fr.base != "" {
			r = strings.TrimPrefix(p, fr.base+"/")
		}
		if dir {
			r += "/"
		}
		if fr.gi.MatchesPath(r) {
			return true
		}
	}
	return false
}

// loadIgnore reads and compiles a .gitignore; nil when there is none or it
// is not a readable regular file.
func loadIgnore(root *os.Root, name string) *ignore.GitIgnore {
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil
	}
	f, err := root.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := readAll(f, fi.Size())
	if err != nil {
		return nil
	}
	return ignore.CompileIgnoreLines(strings.Split(string(data), "\n")...)
}
