package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode"

	"github.com/specloop/specloop/gen"

	"github.com/specloop/specloop/internal/gitshape"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/sandbox"
	"golang.org/x/sync/semaphore"
)

// Env is what handlers get from the runtime besides their arguments.
type Env struct {
	// Workspace is the confined directory file tools work in; nil when the
	// runtime has none (tools that need one are then not offered).
	Workspace *Workspace
	// Sandbox confines commands; set whenever tools that run processes are
	// offered.
	Sandbox *sandbox.Sandbox
}

// nonblock makes opening a FIFO or a device return at once; regular files
// ignore it.
const nonblock = syscall.O_NONBLOCK

// Workspace is a directory that file tools cannot escape: every access goes
// through an os.Root, which resolves ".." and symbolic links without leaving
// it and without check-then-open races. Paths given by a model are
// workspace-relative and slash-separated; absolute paths, paths that climb
// above the root, NUL bytes and symbolic links that lead outside are
// refused. Only regular files are read or written: devices, FIFOs and
// sockets are refused before anything blocks on them. The write tools
// never write into a git directory (a .git path component in any case, or
// a directory git would take for a repository, also through symbolic
// links), never leave a directory looking like one (judged on the state
// the write leaves, see gitShaped), never write where a repository's
// configuration takes hooks or configuration from the work tree
// (core.hooksPath, include.path, includeIf.*.path: see trustedPath), and
// never write a name with a control character or a bidirectional
// control, or a file with other hard links.
//
// A Workspace remembers the original content of every file the file tools
// changed, so a run can report its patch (see Runtime.Patch). It is safe for
// concurrent use.
type Workspace struct {
	dir  string
	root *os.Root
	// walkMaxEntries caps the entries a walk reads (see the constant).
	walkMaxEntries int

	// calls orders the calls that run at once on the workspace's
	// directory, from this Workspace and every other one on the same
	// directory in this process (a run, /mcp and each /v1/tools call have
	// their own): commands share the directory, a write tool has it
	// alone. The write rules check a path and then write it; a command
	// running in between could turn a directory on it into a symbolic
	// link to .git.
	calls *semaphore.Weighted

	mu       sync.Mutex
	original map[string]originalFile // by workspace-relative path

	trustMu sync.Mutex
	trust   map[string][]gitshape.Rel // by the work tree top (workspace-relative, "" for the enclosing repository)
	nested  func() []string           // the nested repositories' tops, found once (see nestedRepos)

	baseMu sync.Mutex
	base   patchBase // what the run's patch is computed against (see patch.go)
}

// originalFile is a file's state before the file tools first changed it.
type originalFile struct {
	existed bool
	content []byte
}

// OpenWorkspace opens dir as a workspace.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return newWorkspace(abs, root), nil
}

// newWorkspace is a workspace on the opened directory root, whose path is
// dir; every constructor ends here.
func newWorkspace(dir string, root *os.Root) *Workspace {
	w := &Workspace{dir: dir, root: root, walkMaxEntries: walkMaxEntries, original: map[string]originalFile{}, trust: map[string][]gitshape.Rel{}, calls: directoryCalls(dir)}
	w.nested = sync.OnceValue(w.nestedRepos)
	return w
}

// dirCalls holds the call semaphore of each directory a workspace was
// opened on, by its path with symbolic links resolved. An entry is a few
// words and stays for the life of the process: a server opens a bounded
// set of workspace directories.
var dirCalls sync.Map // string → *semaphore.Weighted

// directoryCalls returns the call semaphore shared by the workspaces on dir.
func directoryCalls(dir string) *semaphore.Weighted {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	sem, _ := dirCalls.LoadOrStore(dir, semaphore.NewWeighted(maxSharedCalls))
	return sem.(*semaphore.Weighted)
}

// maxSharedCalls is the weight of the workspace: a write tool takes all of
// it, a command one.
const maxSharedCalls = 1 << 30

// Dir returns the workspace's absolute directory.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace's directory handle and removes the private
// repository of the patch's snapshots.
func (w *Workspace) Close() error { return errors.Join(w.root.Close(), w.removeGit()) }

// clean turns a model-supplied path into a clean workspace-relative path
// ("." for the root), refusing what can never be inside the workspace. It
// is purely lexical; os.Root then enforces confinement on the file system.
func clean(p string) (string, error) {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "", Errorf(gen.ErrorCodeOutsideWorkspace, "the path contains a NUL byte")
	case p == "":
		return ".", nil
	case path.IsAbs(p) || filepath.IsAbs(p):
		return "", Errorf(gen.ErrorCodeOutsideWorkspace, "absolute paths are outside the workspace; give a path relative to the workspace root")
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", Errorf(gen.ErrorCodeOutsideWorkspace, "the path %s is outside the workspace", quote(p))
	}
	return c, nil
}

// errPathEscapes is the text of os.Root's (unexported) error for a path,
// or a symbolic link on it, that leads outside the root.
const errPathEscapes = "path escapes from parent"

// fsError turns a file-system error on rel into a tool error when it is an
// expected condition, and returns other errors unchanged (they stop the run).
// notFound is the code for a missing path (write_file has none: its parent
// directories are created).
func fsError(err error, rel string, notFound gen.ErrorCode) error {
	var te *Error
	if errors.As(err, &te) {
		return err
	}
	inner := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		inner = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		inner = le.Err
	}
	switch {
	case inner != nil && inner.Error() == errPathEscapes:
		return Errorf(gen.ErrorCodeOutsideWorkspace, "the path %s leads outside the workspace (through a symbolic link)", quote(rel))
	case errors.Is(err, syscall.ELOOP):
		return Errorf(gen.ErrorCodeOutsideWorkspace, "the path %s has too many levels of symbolic links", quote(rel))
	case errors.Is(err, syscall.ENAMETOOLONG):
		return Errorf(gen.ErrorCodeInvalidPath, "the path %s is too long for the file system", quote(rel))
	case errors.Is(err, fs.ErrPermission):
		return Errorf(gen.ErrorCodePermissionDenied, "the file system refuses access to %s", quote(rel))
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		if notFound == "" {
			return Errorf(gen.ErrorCodeNotARegularFile, "a parent of %s is not a directory", quote(rel))
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return Errorf(notFound, "%s does not exist (a parent is not a directory)", quote(rel))
		}
		return Errorf(notFound, "%s does not exist", quote(rel))
	}
	return fmt.Errorf("%s: %w", rel, err)
}

// quote quotes a path for a message, shortened when long. Paths are
// workspace content the model already has, never secrets.
func quote(p string) string { return fmt.Sprintf("%q", textclip.Clip(p, 200)) }

// openRegular opens rel for reading when it is a regular file. It never
// blocks on a FIFO or device: the file is opened non-blocking and checked
// again after the open, so swapping the file between the checks is caught.
func (w *Workspace) openRegular(rel string) (*os.File, fs.FileInfo, error) {
	fi, err := w.root.Stat(rel)
	if err != nil {
		return nil, nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(rel, fi)
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(rel, fi)
	}
	return f, fi, nil
}

func notRegular(rel string, fi fs.FileInfo) error {
	kind := "a special file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	}
	return Errorf(gen.ErrorCodeNotARegularFile, "%s is %s, not a regular file", quote(rel), kind)
}

// writeTarget resolves rel for a write: it must not escape, and when it
// exists it must be a regular file (a symbolic link is refused rather than
// replaced, and one that leads outside says so). It returns whether the
// file exists and its mode. notFound is the code for a parent that is not a
// directory ("" for not_a_regular_file).
func (w *Workspace) writeTarget(rel string, notFound gen.ErrorCode) (exists bool, mode fs.FileMode, err error) {
	if rel == "." {
		return false, 0, Errorf(gen.ErrorCodeNotARegularFile, "the workspace root is a directory, not a regular file")
	}
	if err := w.writable(rel); err != nil {
		return false, 0, err
	}
	fi, err := w.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, 0, nil
	case err != nil:
		return false, 0, fsError(err, rel, notFound)
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, err := w.root.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, 0, fsError(err, rel, notFound)
		}
		target, _ := w.root.Readlink(rel)
		if path.IsAbs(target) {
			return false, 0, Errorf(gen.ErrorCodeOutsideWorkspace, "%s is a symbolic link that leads outside the workspace", quote(rel))
		}
		return false, 0, Errorf(gen.ErrorCodeNotARegularFile, "%s is a symbolic link (to %s), not a regular file; write to its target instead", quote(rel), quote(target))
	case !fi.Mode().IsRegular():
		return false, 0, notRegular(rel, fi)
	}
	if n := hardLinks(fi); n > 1 {
		return false, 0, Errorf(gen.ErrorCodeHardLink, "%s has %d hard links, and the others may be outside the workspace, so the write tools do not touch it; write the content to a new file instead", quote(rel), n)
	}
	return true, fi.Mode().Perm(), nil
}

// writable refuses a write to rel, before anything is read or changed, when
// rel contains a control character (no patch can carry the name: see
// diffName) or a bidirectional control (it makes a name read as another),
// names a .git entry, leads into one through symbolic links inside the
// workspace, is a hook or configuration file a repository's configuration
// takes from the work tree (see trustedPath), or would leave a directory
// on its way looking like a git directory (see gitShaped): a repository's
// configuration and hooks are code that git runs.
//
// Symbolic links are followed here and again when the file is opened; a
// command cannot swap one in between, since no command runs during a file
// tool's call.
func (w *Workspace) writable(rel string) error {
	if err := validName(rel); err != nil {
		return err
	}
	if resolved := w.resolve(rel); gitPath(rel) || gitPath(resolved) {
		return Errorf(gen.ErrorCodeProtectedPath, "%s is inside a .git directory or names one: the file tools never write a repository's metadata (its configuration and hooks are programs git runs, and a .git file points git elsewhere); reading it is allowed", quote(rel))
	}
	if err := w.trustedPath(rel); err != nil {
		return err
	}
	return w.gitShaped([]string{rel})
}

// trustedPath refuses a write to rel when it, or where its symbolic links
// lead, is a file the configuration of the workspace's repository (its
// own .git, or the repository it sits in) or of a nested repository
// trusts (see gitshape.Repository): an entry of the directory
// core.hooksPath names (husky's .husky; with husky 9's .husky/_ also the
// entries of .husky), or a file include.path or includeIf.*.path names.
// The configuration is read from its files, never by running git, once
// per workspace. Names are compared without case, which only errs on
// refusing.
func (w *Workspace) trustedPath(rel string) error {
	resolved := w.resolve(rel)
	tops := append([]string{""}, w.nested()...)
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if _, err := w.root.Lstat(path.Join(d, ".git")); err == nil && !slices.Contains(tops, d) {
			tops = append(tops, d)
		}
	}
	for _, top := range tops {
		for _, t := range w.trusted(top) {
			for _, at := range []string{t.Rel, w.resolve(t.Rel)} {
				for _, p := range []string{rel, resolved} {
					hit := strings.EqualFold(p, at)
					if t.Dir {
						hit = hit || strings.EqualFold(path.Dir(p), at)
					}
					if !hit {
						continue
					}
					repo := "the workspace's repository"
					if top != "" {
						repo = "the repository " + quote(top)
					}
					if t.Link != "" {
						return Errorf(gen.ErrorCodeProtectedPath, "%s is what the hook %s of %s links to: git runs it for whoever commits, checks out or merges there, unsandboxed, so the file tools never write it; no file was changed", quote(rel), quote(t.Link), repo)
					}
					if t.Dir {
						return Errorf(gen.ErrorCodeProtectedPath, "%s is in the hooks directory of %s (core.hooksPath in %s): git runs what is there for whoever commits, checks out or merges in it, unsandboxed, so the file tools never write it; no file was changed", quote(rel), repo, t.Config)
					}
					return Errorf(gen.ErrorCodeProtectedPath, "%s is a configuration file of %s (%s in %s): git reads it as its own configuration, which names programs git runs, so the file tools never write it; no file was changed", quote(rel), repo, t.Key, t.Config)
				}
			}
		}
	}
	return nil
}

// maxNestedWalk bounds the entries nestedRepos looks at; past it, only
// the repositories on a written path's way are found (trustedPath).
const maxNestedWalk = 200_000

// nestedRepos returns the workspace-relative tops of the repositories
// nested in the workspace (directories with a .git entry), found by a walk
// that follows no symbolic link and skips the inside of .git directories;
// w.nested runs it once per workspace. The file tools cannot make a .git
// entry and the sandbox's guard undoes one a command makes, so the walk
// stays true.
func (w *Workspace) nestedRepos() (nested []string) {
	seen := 0
	_ = filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if seen++; seen > maxNestedWalk {
			return filepath.SkipAll
		}
		if err != nil || d == nil {
			return nil
		}
		if gitshape.IsGitName(d.Name()) {
			if rel, ok := gitshape.Within(w.dir, filepath.Dir(p)); ok && rel != "." {
				nested = append(nested, rel)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return nested
}

// trusted returns the trusted paths inside the workspace of the
// repository whose work tree top is the workspace-relative top ("" for
// the repository the workspace is in), read once per workspace.
func (w *Workspace) trusted(top string) []gitshape.Rel {
	w.trustMu.Lock()
	defer w.trustMu.Unlock()
	if ts, ok := w.trust[top]; ok {
		return ts
	}
	repo := filepath.Join(w.dir, filepath.FromSlash(top))
	if top == "" {
		repo = gitshape.Enclosing(w.dir)
	}
	var ts []gitshape.Rel
	if repo != "" {
		ts = gitshape.InWorkspace(w.dir, repo, gitshape.PersonConfigs())
	}
	w.trust[top] = ts
	return ts
}

// validName refuses a path with a character no patch can carry or that
// makes a name read as another: C0 and C1 control characters, DEL, and the
// bidirectional controls (embeddings, overrides, isolates and marks).
// The bidirectional controls are Unicode's Bidi_Control property: the
// marks (ALM, LRM, RLM), embeddings and overrides (U+202A–U+202E) and
// isolates (U+2066–U+2069).
func validName(rel string) error {
	for _, r := range rel {
		switch {
		case r < 0x20 || r == 0x7f:
			return Errorf(gen.ErrorCodeInvalidPath, "the path %s contains a control character (byte 0x%02x), which a patch cannot carry; choose a name without newlines, tabs or other control characters", quote(rel), r)
		case r >= 0x80 && r <= 0x9f:
			return Errorf(gen.ErrorCodeInvalidPath, "the path %s contains a C1 control character (U+%04X), which a patch cannot carry; choose a name without control characters", quote(rel), r)
		case unicode.Is(unicode.Bidi_Control, r):
			return Errorf(gen.ErrorCodeInvalidPath, "the path %s contains a bidirectional control character (U+%04X), which makes a name display as another; choose a name without it", quote(rel), r)
		}
	}
	return nil
}

// gitShaped refuses a write of the files paths (as a whole: the files a
// patch leaves) when afterwards a directory on one of their paths, with
// symbolic links resolved or not, would look like a git directory
// (gitshape: a HEAD with objects/ and refs/, or with commondir, or a
// config, hooks/ or commondir beside any of them), whether the write makes
// it one or writes inside one. Git takes such a directory for the
// repository of whoever runs git in it, before it looks for a .git above,
// and runs what its configuration names. Only the directories on the
// written paths are judged: a write changes no other directory's entries.
// Entries a write removes are not taken off, which only errs on refusing.
func (w *Workspace) gitShaped(paths []string) error {
	added := map[string]gitshape.Entries{}
	var dirs []string
	writes := map[string]string{} // a judged directory → the path written below it
	note := func(p, written string) {
		for child, dir := p, path.Dir(p); ; child, dir = dir, path.Dir(dir) {
			typ := fs.ModeDir
			if child == p {
				typ = 0
			}
			if _, ok := added[dir]; !ok {
				dirs = append(dirs, dir)
				writes[dir] = written
			}
			added[dir] |= gitshape.Marker(path.Base(child), typ)
			if dir == "." {
				return
			}
		}
	}
	for _, p := range paths {
		note(p, p)
		if r := w.resolve(p); r != p && r != ".." && !strings.HasPrefix(r, "../") {
			note(r, p)
		}
	}
	for _, dir := range dirs {
		if e := added[dir] | w.markers(dir); e.Looks() {
			where := quote(dir)
			if dir == "." {
				where = "the workspace root"
			}
			return Errorf(gen.ErrorCodeProtectedPath, "writing %s would leave %s looking like a .git directory (it would have %s), which git takes for a repository and whose configuration and hooks it runs, so the file tools never write one; no file was changed", quote(writes[dir]), where, e.String())
		}
	}
	return nil
}

// markers returns the marker entries the directory rel has on disk.
func (w *Workspace) markers(rel string) gitshape.Entries {
	var e gitshape.Entries
	for _, name := range gitshape.Names {
		if fi, err := w.root.Lstat(path.Join(rel, name)); err == nil {
			e |= gitshape.Marker(name, fi.Mode().Type())
		}
	}
	return e
}

// gitPath reports whether a component of the slash-separated path p names
// a .git entry, the way file systems that fold case or ignore some
// characters (macOS, Windows) would see it.
func gitPath(p string) bool { return slices.ContainsFunc(strings.Split(p, "/"), gitshape.IsGitName) }

// maxLinkHops bounds the symbolic links resolve follows.
const maxLinkHops = 40

// resolve follows the symbolic links inside the workspace on the path rel
// and returns the workspace-relative path it leads to. It is lexical where
// links are absolute, lead outside or are missing: os.Root refuses those
// when the file is opened.
func (w *Workspace) resolve(rel string) string {
	done, rest := ".", strings.Split(rel, "/")
	for hops := 0; len(rest) > 0; {
		next := path.Join(done, rest[0])
		fi, err := w.root.Lstat(next)
		if err != nil {
			return path.Join(append([]string{done}, rest...)...)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done, rest = next, rest[1:]
			continue
		}
		target, err := w.root.Readlink(next)
		if hops++; err != nil || hops > maxLinkHops || path.IsAbs(target) {
			return path.Join(append([]string{next}, rest[1:]...)...)
		}
		to := path.Join(path.Dir(next), target)
		if to == ".." || strings.HasPrefix(to, "../") {
			return path.Join(append([]string{next}, rest[1:]...)...)
		}
		done, rest = ".", append(strings.Split(to, "/"), rest[1:]...)
	}
	return done
}

// writeAtomic replaces rel with data: it writes a temporary file in the same
// directory, syncs it (so the rename can never land before the data) and
// renames it over rel, so a crash leaves either the old or the new content,
// never a mix. Parent directories are created.
func (w *Workspace) writeAtomic(rel string, data []byte, perm fs.FileMode) error {
	dir, base := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return fsError(err, rel, "")
		}
	}
	var (
		f   *os.File
		tmp string
		err error
	)
	for range 10 {
		tmp = path.Join(dir, "."+textclip.Clip(base, 100)+".specloop-"+randomSuffix())
		f, err = w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fsError(err, rel, "")
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = w.root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := f.Chmod(perm); err != nil { // exact mode, whatever the umask
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := w.root.Rename(tmp, rel); err != nil {
		return fsError(err, rel, "")
	}
	ok = true
	// The directory is not synced: a crash may then undo the rename, which
	// leaves the old content, whole.
	return nil
}

// remember records rel's content before its first change by a file tool.
func (w *Workspace) remember(rel string, existed bool, content []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.original[rel]; !ok {
		w.original[rel] = originalFile{existed: existed, content: content}
	}
}
