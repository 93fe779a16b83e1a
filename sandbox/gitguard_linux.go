package sandbox

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/specloop/specloop/internal/gitshape"
	"github.com/specloop/specloop/internal/wslock"
	"golang.org/x/sys/unix"
)

// Caps of what the guard keeps of a guarded file: its content up to
// maxHeldFile (restored when a command changes it), up to maxHeld in
// all; past that a hash, and past maxHashedFile only its size and
// modification time.
const (
	maxHeldFile   = 256 << 10
	maxHeld       = 16 << 20
	maxHashedFile = 16 << 20
)

// guardedFile is a guarded file as the guard saw it.
type guardedFile struct {
	owner   string      // the git directory it belongs to ("" for a .git file)
	mode    fs.FileMode // type and permissions
	sum     [32]byte
	size    int64
	mtime   int64 // only for files too large to hash
	link    string
	content []byte
	held    bool
	trusted bool // a file the configuration trusts (see gitshape.Trusted)
}

func (f guardedFile) same(g guardedFile) bool {
	return f.mode == g.mode && f.sum == g.sum && f.size == g.size && f.mtime == g.mtime && f.link == g.link
}

// gitState is what the guard saw of a directory tree.
type gitState struct {
	markers    map[string]gitshape.Entries // every directory with a marker entry (Looks: a git directory)
	marks      map[string]gitshape.Entries // every marker entry, by path
	linkTarget map[string]string           // marker entries that are symbolic links, of git directories
	dotGit     map[string]fs.FileMode      // every .git entry (any case), by path
	files      map[string]guardedFile      // guarded files, by path
	unreadable map[string]bool
	tooDeep    map[string]bool // directories at maxGuardDepth, not walked
	held       int
	trust      []gitshape.Rel // the trusted paths of the repositories (see guardTrust)
}

// maxGuardRepos bounds the repositories (the enclosing one and nested
// ones) whose configuration the guard reads for trusted paths.
const maxGuardRepos = 4096

// snapshotGit records the git state of the tree under root, the command's
// directory at dirPath, before a command: walkGit, and the files of the
// paths the repositories' configuration trusts.
func snapshotGit(root *os.Root, dirPath string) *gitState {
	st := walkGit(root)
	st.trust = guardTrust(dirPath, st)
	st.recordTrusted(root)
	return st
}

// guardTrust returns the trusted paths inside dirPath of the repository
// dirPath is in and of every repository nested in it (each .git entry
// st saw), read from their configuration without running git.
func guardTrust(dirPath string, st *gitState) []gitshape.Rel {
	dirPath = filepath.Clean(dirPath)
	var tops []string
	if top := gitshape.Enclosing(dirPath); top != "" {
		tops = append(tops, top)
	}
	for _, p := range slices.Sorted(maps.Keys(st.dotGit)) {
		if d := path.Dir(p); d != "." && len(tops) < maxGuardRepos {
			tops = append(tops, filepath.Join(dirPath, filepath.FromSlash(d)))
		}
	}
	var out []gitshape.Rel
	person := gitshape.PersonConfigs()
	for _, top := range tops {
		out = append(out, gitshape.InWorkspace(dirPath, top, person)...)
	}
	return out
}

// recordTrusted records the files of st.trust: every file in a trusted
// hooks directory (and the directory's entry when it is a symbolic link),
// and each trusted configuration file. Paths are looked up through os.Root,
// which follows symbolic links inside the tree as git would: what is
// compared is what git would run or read at the path.
func (st *gitState) recordTrusted(root *os.Root) {
	record := func(p string) { st.record(root, p, p, guardedFile{trusted: true}) }
	for _, t := range st.trust {
		p := t.Rel
		if !t.Dir {
			if p != "." {
				record(p)
			}
			continue
		}
		fi, err := root.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			record(p)
		}
		// Opened without blocking: a command may have put a FIFO there
		// (following a link is fine, the root keeps it inside).
		entries, err := readDir(root, p, unix.O_NONBLOCK)
		if err != nil {
			if fi.Mode()&fs.ModeSymlink == 0 {
				st.unreadable[p] = true
			}
			continue
		}
		for _, de := range entries {
			if !de.IsDir() {
				record(path.Join(p, de.Name()))
			}
		}
	}
}

// maxGuardDepth bounds the directory levels the guard walks. A deeper
// directory a command made is removed whole (it could hide a git
// directory no walk sees); one that was there before the command fails
// the call, since the guard cannot vouch for it.
const maxGuardDepth = 256

// walkGit records the git state of the tree under root. It never follows
// a symbolic link, and skips the inside of the objects/ and refs/ of git
// directories. Each directory is opened from its parent's handle by one
// name.
func walkGit(root *os.Root) *gitState {
	st := &gitState{
		markers: map[string]gitshape.Entries{}, marks: map[string]gitshape.Entries{}, linkTarget: map[string]string{},
		dotGit: map[string]fs.FileMode{}, files: map[string]guardedFile{}, unreadable: map[string]bool{},
		tooDeep: map[string]bool{},
	}
	var visit func(r *os.Root, rel, hooksOf string, depth int)
	visit = func(r *os.Root, rel, hooksOf string, depth int) {
		entries, err := readDir(r, ".", noFollow)
		if err != nil {
			st.unreadable[rel] = true
			return
		}
		var e gitshape.Entries
		for _, de := range entries {
			if m := gitshape.Marker(de.Name(), de.Type()); m != 0 {
				e |= m
				st.marks[path.Join(rel, de.Name())] = m
			}
		}
		if e != 0 {
			st.markers[rel] = e
		}
		looks := e.Looks()
		for _, de := range entries {
			name, typ := de.Name(), de.Type()
			p := path.Join(rel, name)
			m := st.marks[p]
			switch {
			case gitshape.IsGitName(name):
				st.dotGit[p] = typ
				if !typ.IsDir() {
					st.record(r, name, p, guardedFile{})
				}
			case hooksOf != "" && !typ.IsDir():
				st.record(r, name, p, guardedFile{owner: hooksOf})
			case looks && gitshape.Guarded(name) && !typ.IsDir():
				st.record(r, name, p, guardedFile{owner: rel})
			}
			if looks && typ&fs.ModeSymlink != 0 && m != 0 {
				st.linkTarget[p], _ = r.Readlink(name)
			}
			if !typ.IsDir() {
				continue
			}
			if looks && m == gitshape.Objects {
				st.recordAlternates(r, name, p, rel)
			}
			if looks && (m == gitshape.Objects || m == gitshape.Refs) {
				continue
			}
			if depth >= maxGuardDepth {
				st.tooDeep[p] = true
				continue
			}
			sub, err := r.OpenRoot(name)
			if err != nil {
				st.unreadable[p] = true
				continue
			}
			owner := hooksOf // of the hooks below
			if looks && m == gitshape.Hooks {
				owner = rel
			}
			visit(sub, p, owner, depth+1)
			sub.Close()
		}
	}
	visit(root, ".", "", 0)
	return st
}

// recordAlternates records the alternates file of the object directory
// name of the git directory owner, at p: it names the object directories
// git reads besides its own, which the sandbox lets commands read as the
// file named them when the run's workspace was opened
// (Policy.ObjectDirs), and a command's change to it would widen that for
// the next run opened on it.
func (st *gitState) recordAlternates(r *os.Root, name, p, owner string) {
	info, err := r.OpenRoot(path.Join(name, "info"))
	if err != nil {
		return
	}
	defer info.Close()
	st.record(info, "alternates", path.Join(p, "info", "alternates"), guardedFile{owner: owner})
}

// record reads the guarded file name of the directory r, at p, into f
// (which says whose it is).
func (st *gitState) record(r *os.Root, name, p string, f guardedFile) {
	fi, err := r.Lstat(name)
	if err != nil {
		return
	}
	f.mode, f.size = fi.Mode(), fi.Size()
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		f.link, _ = r.Readlink(name)
	case !fi.Mode().IsRegular():
	case fi.Size() > maxHashedFile:
		f.mtime = fi.ModTime().UnixNano()
	default:
		fr, err := r.OpenFile(name, os.O_RDONLY|noFollow, 0)
		if err != nil {
			return
		}
		data, err := io.ReadAll(io.LimitReader(fr, maxHashedFile+1))
		fr.Close()
		if err != nil {
			return
		}
		f.size, f.sum = int64(len(data)), sha256.Sum256(data)
		if len(data) <= maxHeldFile && st.held+len(data) <= maxHeld {
			f.content, f.held = data, true
			st.held += len(data)
		}
	}
	st.files[p] = f
}

// gitGuard is the state a directory had before the commands running in it
// at present started: they all are checked against it, so a command that
// starts while another runs cannot make the other's changes its baseline.
type gitGuard struct {
	key    string    // the directory's identity (see wslock.Key)
	once   sync.Once // takes before
	before *gitState
	mu     sync.Mutex // one check at a time
	users  int
}

var gitGuards = struct {
	sync.Mutex
	m map[string]*gitGuard
}{m: map[string]*gitGuard{}}

// startGuard takes (or shares) the baseline of the directory of c, which
// it opens as an os.Root through the descriptor held open, never its path
// looked up again.
func startGuard(c Command) (*gitGuard, *os.Root, error) {
	fi, err := c.Dir.Stat()
	if err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(c.Dir.Fd())))
	if err != nil {
		return nil, nil, fmt.Errorf("open the command's directory: %w", err)
	}
	key := wslock.Key(fi, c.DirPath)
	gitGuards.Lock()
	g := gitGuards.m[key]
	if g == nil {
		g = &gitGuard{key: key}
		gitGuards.m[key] = g
	}
	g.users++
	gitGuards.Unlock()
	// The walk runs outside the lock of all directories; commands in this
	// one wait for it and share it.
	g.once.Do(func() { g.before = snapshotGit(root, c.DirPath) })
	return g, root, nil
}

// finish checks the tree against the baseline, undoes what changed and
// lets go of the baseline. allowGitWrites exempts the HEAD files of the
// top-level .git (a checkout or commit moves them).
func (g *gitGuard) finish(root *os.Root, allowGitWrites bool) *GitError {
	defer root.Close()
	defer func() {
		gitGuards.Lock()
		if g.users--; g.users == 0 {
			delete(gitGuards.m, g.key)
		}
		gitGuards.Unlock()
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	return undoGit(root, g.before, allowGitWrites)
}

// undoGit walks the tree, compares it with before and undoes every change
// that adds or alters a git directory; it returns nil when there was none.
func undoGit(root *os.Root, before *gitState, allowGitWrites bool) *GitError {
	// The state after the command, with the trusted paths of before.
	again := func() *gitState {
		st := walkGit(root)
		st.trust = before.trust
		st.recordTrusted(root)
		return st
	}
	now := again()
	// A directory a command made unreadable could hide a git directory:
	// it is made readable to its owner again.
	for range 3 {
		fixed := false
		for d := range now.unreadable {
			if !before.unreadable[d] && d != "." {
				if fi, err := root.Lstat(d); err == nil && fi.IsDir() && root.Chmod(d, fi.Mode().Perm()|0o700) == nil {
					fixed = true
				}
			}
		}
		if !fixed {
			break
		}
		now = again()
	}
	e := &GitError{}
	var removed []string
	gone := func(p string) bool {
		return slices.ContainsFunc(removed, func(r string) bool { return p == r || strings.HasPrefix(p, r+"/") })
	}
	remove := func(p string) {
		if gone(p) {
			return
		}
		if err := root.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.Unchecked = append(e.Unchecked, p+" ("+errText(err)+")")
			return
		}
		removed = append(removed, p)
		e.Paths = append(e.Paths, p)
	}
	// A tree deeper than the guard walks that the command made could
	// hold a git directory no walk sees: it goes whole, since nothing of
	// it was there before (a deep tree that was is reported, below).
	for _, d := range slices.Sorted(maps.Keys(now.tooDeep)) {
		if !before.tooDeep[d] {
			remove(d)
		} else {
			e.Unchecked = append(e.Unchecked, d+" (deeper than the guard walks, so what a command does inside it is not checked)")
		}
	}
	for d := range now.unreadable {
		if !before.unreadable[d] && !gone(d) {
			e.Unchecked = append(e.Unchecked, d+" (unreadable)")
		}
	}
	// New .git entries, nested ones included.
	for _, p := range slices.Sorted(maps.Keys(now.dotGit)) {
		if typ, ok := before.dotGit[p]; !ok || typ != now.dotGit[p] {
			remove(p)
		}
	}
	// Directories that look like git directories now and did not: the
	// marker entries the command added go (never what was there before).
	for _, p := range slices.Sorted(maps.Keys(now.marks)) {
		d := path.Dir(p)
		if had := before.markers[d]; now.markers[d].Looks() && !had.Looks() && had&now.marks[p] == 0 {
			remove(p)
		}
	}
	// Git directories that were there before: a marker entry turned into
	// a symbolic link (hooks/ to a directory of the command's scripts), or
	// one whose target changed, goes.
	for _, p := range slices.Sorted(maps.Keys(now.linkTarget)) {
		if before.markers[path.Dir(p)].Looks() {
			if old, ok := before.linkTarget[p]; !ok || old != now.linkTarget[p] {
				remove(p)
			}
		}
	}
	// Guarded files: new ones in a git directory that was there go,
	// changed ones are restored (or go, when too large to have been kept),
	// removed ones come back.
	exempt := func(p string) bool {
		return allowGitWrites && strings.HasPrefix(p, ".git/") && strings.EqualFold(path.Base(p), "HEAD")
	}
	for _, p := range slices.Sorted(maps.Keys(now.files)) {
		f := now.files[p]
		if gone(p) || exempt(p) {
			continue
		}
		old, ok := before.files[p]
		switch {
		case !ok && f.owner != "" && before.markers[f.owner].Looks(), !ok && f.trusted:
			remove(p)
		case ok && !old.same(f):
			remove(p)
			if old.held && gone(p) {
				restore(root, p, old, e)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(before.files)) {
		old := before.files[p]
		if _, ok := now.files[p]; ok || !old.held || exempt(p) {
			continue
		}
		if old.owner == "" || now.markers[old.owner].Looks() {
			if _, err := root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				restore(root, p, old, e)
				e.Paths = append(e.Paths, p)
			}
		}
	}
	if len(e.Paths) == 0 && len(e.Unchecked) == 0 {
		return nil
	}
	slices.Sort(e.Paths)
	e.Paths = slices.Compact(e.Paths)
	slices.Sort(e.Unchecked)
	return e
}

// restore writes a guarded file back as it was: a new file (never through
// what is at its path now, which is gone), or the symbolic link.
func restore(root *os.Root, p string, f guardedFile, e *GitError) {
	var err error
	if dir := path.Dir(p); dir != "." {
		err = root.MkdirAll(dir, 0o755)
	}
	switch {
	case err != nil:
	case f.mode&fs.ModeSymlink != 0:
		err = root.Symlink(f.link, p)
	default:
		var w *os.File
		if w, err = root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, f.mode.Perm()); err == nil {
			_, err = w.Write(f.content)
			if err2 := w.Chmod(f.mode.Perm()); err == nil {
				err = err2
			}
			if err2 := w.Close(); err == nil {
				err = err2
			}
		}
	}
	if err != nil {
		e.Unchecked = append(e.Unchecked, p+" (not restored: "+errText(err)+")")
	}
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// noFollow makes an open fail on a symbolic link, and not block on a FIFO.
const noFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK

// readDir lists the directory name of r, opened with flags (O_NONBLOCK
// at least: a FIFO there fails as a directory and never blocks). It reads
// the entries' types from the directory itself, through a descriptor of
// its own: a ReadDir of a file of an os.Root stats every entry, which
// costs most of a walk.
func readDir(r *os.Root, name string, flags int) ([]fs.DirEntry, error) {
	d, err := r.OpenFile(name, os.O_RDONLY|flags, 0)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Dup(int(d.Fd()))
	d.Close()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	return f.ReadDir(-1)
}
