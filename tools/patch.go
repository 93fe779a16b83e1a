package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/internal/gitshape"
	"github.com/specloop/specloop/internal/textclip"
)

const (
	// patchTimeout bounds the git commands that compute a patch.
	patchTimeout = time.Minute
	// maxPatchBytes caps a run's patch; a longer one is cut with a note.
	maxPatchBytes = 4 << 20
	// maxExcludeBytes caps the repository's info/exclude file we copy.
	maxExcludeBytes = 1 << 20
)

// Patch returns the changes the run made to the runtime's workspace, as a
// unified diff (it implements agent.Patcher); empty without a workspace or
// when no tool that can change files (edit_file, write_file, apply_patch,
// run_command, a custom tool's command)
// was called.
//
// In a git work tree it is a `git diff` between two snapshots of the
// workspace, one taken just before the first such tool call and one now, so
// new files and changes made by commands are included and changes that were
// there before the run are not. The snapshots live in a private repository
// the runtime creates in a temporary directory (removed by Workspace.Close):
// nothing of the workspace's own repository is run, read as configuration
// or changed. Elsewhere, or when git fails, it is the diff of every file the
// file tools changed, against its content before their first change.
func (r *Runtime) Patch(ctx context.Context) (string, error) {
	if r.env.Workspace == nil {
		return "", nil
	}
	return r.env.Workspace.patch(ctx)
}

// changing is called before a tool call that may change files: the first
// time, it takes the git snapshot the patch is computed against.
func (w *Workspace) changing(ctx context.Context) {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if w.touched {
		return
	}
	w.touched = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
	defer cancel()
	g, err := newShadowGit(w.dir)
	if err != nil {
		return // not in a git work tree, or no git: the file tools' record
	}
	if tree, err := g.snapshot(ctx, true); err == nil {
		w.git, w.baseTree = g, tree
	} else {
		g.remove()
	}
}

func (w *Workspace) patch(ctx context.Context) (string, error) {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if !w.touched {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, patchTimeout)
	defer cancel()
	out := newCapture(maxPatchBytes, 0)
	var err error
	if w.git != nil {
		err = w.git.diffSince(ctx, w.baseTree, out)
	}
	if w.git == nil || err != nil {
		// Not a git work tree, or git failed on it: the file tools' record
		// still says what they changed.
		out = newCapture(maxPatchBytes, 0)
		if err := w.toolPatch(out); err != nil {
			return "", err
		}
	}
	p := string(out.head)
	if dropped := out.omitted(); dropped > 0 {
		cut := strings.LastIndexByte(p, '\n') + 1
		p = p[:cut] + fmt.Sprintf("[patch cut: %d more bytes]\n", int64(len(p)-cut)+dropped)
	}
	return p, nil
}

// removeGit removes the private repository of the patch's snapshots.
func (w *Workspace) removeGit() error {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if w.git == nil {
		return nil
	}
	err := w.git.remove()
	w.git = nil
	return err
}

// toolPatch diffs the files the file tools changed against their originals.
func (w *Workspace) toolPatch(out io.Writer) error {
	w.mu.Lock()
	originals := maps.Clone(w.original)
	w.mu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(originals)) {
		o := originals[p]
		f, _, err := w.openRegular(p)
		var cur []byte
		if err == nil {
			cur, err = io.ReadAll(f)
			f.Close()
		}
		exists := err == nil
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				return err
			}
			cur = nil // gone, or no longer a regular file
		}
		io.WriteString(out, fileDiff(p, o.content, o.existed, cur, exists))
	}
	return nil
}

// shadowGit is a private git repository whose work tree is the repository
// the workspace is in: the patch's snapshots are trees written there.
//
// Why nothing in the work tree can make this git execute code:
//   - Configuration: git reads only the private config written here.
//     GIT_DIR names the private repository, so the workspace's .git (and
//     its config, include.path, hooks, fsmonitor, info/attributes) is never
//     discovered; GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null and
//     HOME/XDG_CONFIG_HOME pointing into the private directory leave no
//     other config file; the environment is built from scratch (PATH and
//     the variables below), so no GIT_CONFIG_*, GIT_EXTERNAL_DIFF,
//     GIT_PAGER or GIT_DIR of the runtime's reaches git.
//   - Programs named by configuration (filter drivers, textconv, external
//     diff, fsmonitor, pager, hooks) therefore do not exist; the private
//     config also sets core.fsmonitor=false and core.hooksPath=/dev/null,
//     and diff runs with --no-ext-diff --no-textconv and no terminal.
//   - Attributes in the work tree's .gitattributes can only select drivers
//     by name, and no driver is defined; the private info/attributes, which
//     takes precedence over every .gitattributes, also unsets them (and the
//     end-of-line and encoding conversions) for every path, so blobs are
//     the files' exact bytes.
//   - The commands used (add, ls-files, update-index, write-tree, diff of
//     two trees) run no hooks and spawn no helpers; .gitignore files are
//     read as patterns only, and git skips every entry named .git when it
//     walks the tree. The one exception, `git status` run inside a nested
//     repository already in the index, is avoided by never keeping one
//     there (see dropNested); a nested repository's files are added with
//     that directory as the work tree, under the same private GIT_DIR, so
//     its own .git is never read either.
//
// What the work tree still decides is data: which files are ignored, and
// the content of the snapshots.
type shadowGit struct {
	bin    string // git's absolute path
	tmp    string // the private directory: HOME, the repository, the index
	gitDir string
	top    string // the work tree: the top of the workspace's repository
	rel    string // the workspace relative to top, slash-separated; "." for top
	// objects is the workspace repository's object directory, read (never
	// written) as an alternate: a file whose content it already holds needs
	// no copy in the private repository. "" when there is none.
	objects string
}

// privateConfig is the private repository's whole configuration.
const privateConfig = `[core]
	repositoryformatversion = 0
	bare = false
	filemode = true
	symlinks = true
	logallrefupdates = false
	fsmonitor = false
	hooksPath = /dev/null
	untrackedCache = false
	splitIndex = false
	autocrlf = false
	safecrlf = false
	attributesFile = /dev/null
	excludesFile = /dev/null
	quotePath = false
	compression = 1
[gc]
	auto = 0
[diff]
	renames = false
	noprefix = false
	mnemonicPrefix = false
	relative = false
	submodule = short
[index]
	skipHash = false
`

// privateAttributes unsets, for every path, each attribute that selects a
// program or changes a file's bytes on the way into a blob; "!diff" leaves
// binary detection to git's own heuristic.
const privateAttributes = "* !filter !diff !merge !text !eol !crlf !ident !working-tree-encoding\n"

// newShadowGit finds the git work tree the workspace directory dir is in
// (purely by looking for a .git entry: no git runs in it) and creates the
// private repository for it. It fails when dir is in no work tree or git is
// not installed.
func newShadowGit(dir string) (*shadowGit, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	top := gitshape.Enclosing(real)
	if top == "" {
		return nil, errors.New("not a git work tree")
	}
	rel, err := filepath.Rel(top, real)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "specloop-git-*")
	if err != nil {
		return nil, err
	}
	common := commonDir(top)
	g := &shadowGit{bin: bin, tmp: tmp, gitDir: filepath.Join(tmp, "repo"), top: top, rel: filepath.ToSlash(rel), objects: repoObjects(common)}
	for _, d := range []string{"info", "objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(g.gitDir, filepath.FromSlash(d)), 0o700); err != nil {
			g.remove()
			return nil, err
		}
	}
	// The ignore patterns of the repository's info/exclude, so files
	// ignored there stay out of the patch as well. They are read as data;
	// a missing or odd file gives none.
	var exclude []byte
	if common != "" {
		if b, err := readSmall(filepath.Join(common, "info", "exclude"), maxExcludeBytes); err == nil {
			exclude = b
		}
	}
	files := map[string]string{
		"HEAD":            "ref: refs/heads/snapshots\n",
		"config":          privateConfig,
		"info/attributes": privateAttributes,
		"info/exclude":    string(exclude),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(g.gitDir, filepath.FromSlash(name)), []byte(content), 0o600); err != nil {
			g.remove()
			return nil, err
		}
	}
	return g, nil
}

// commonDir returns the directory that holds the objects and info/exclude
// of the repository whose work tree top is top: its git directory (see
// gitshape.GitDir), or the common directory its commondir file names (a
// linked worktree's); "" when there is none.
func commonDir(top string) string {
	gd := gitshape.GitDir(top)
	if gd == "" {
		return ""
	}
	if cd, err := readSmall(filepath.Join(gd, "commondir"), 4096); err == nil {
		c := strings.TrimSpace(string(cd))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gd, c)
		}
		return c
	}
	return gd
}

// repoObjects returns the repository's object directory when it can be
// named in GIT_ALTERNATE_OBJECT_DIRECTORIES, or "".
func repoObjects(common string) string {
	if common == "" {
		return ""
	}
	objects := filepath.Join(common, "objects")
	if fi, err := os.Stat(objects); err != nil || !fi.IsDir() || strings.ContainsAny(objects, ":\"\n") {
		return ""
	}
	return objects
}

// readSmall reads the regular file p when it is at most max bytes; a FIFO
// or a device is refused without blocking on it.
func readSmall(p string, max int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, fs.ErrInvalid
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// maxNested bounds the nested repositories a snapshot reads; past it
// their files are left out of the patch.
const maxNested = 256

// snapshot writes the current state of the workspace (every file that is
// not ignored) as a tree of the private repository and returns its id. The
// private index persists between snapshots, so only files whose stat data
// changed are read again.
//
// Files of nested repositories are files of the workspace too: `git add`
// stops at a directory with a .git (it would record a gitlink), so each
// nested repository is added on its own, into a private index of its own
// with that directory as the work tree (its .gitignore files apply), and
// its tree is read into the snapshot at its path. A command therefore
// cannot hide files from the patch behind a git init.
//
// The first snapshot (base) may leave the content of unchanged files in the
// repository's object directory, which it reads as an alternate: copying a
// whole checkout into the private repository would cost seconds. Later
// snapshots do not use it, so every file changed during the run is stored
// privately, from the bytes in the work tree: the new side of the patch can
// never come from an object the workspace planted under the same id.
func (g *shadowGit) snapshot(ctx context.Context, base bool) (string, error) {
	main := filepath.Join(g.tmp, "index")
	queue, err := g.add(ctx, base, g.top, main, g.rel, "")
	if err != nil {
		return "", err
	}
	args := []string{"write-tree"}
	if !base && g.objects != "" {
		// Unchanged files may be in the alternate only.
		args = append(args, "--missing-ok")
	}
	writeTree := func(index string) (string, error) {
		var tree bytes.Buffer
		if err := g.git(ctx, nil, &tree, base, true, g.top, index, args...); err != nil {
			return "", err
		}
		return strings.TrimSpace(tree.String()), nil
	}
	tree, err := writeTree(main)
	if err != nil || len(queue) == 0 {
		return tree, err
	}
	// The nested repositories, shallowest first: a tree is read in at its
	// path after the tree of the repository around it.
	type nestedTree struct{ prefix, tree string }
	var nested []nestedTree
	for len(queue) > 0 && len(nested) < maxNested {
		prefix := queue[0]
		queue = queue[1:]
		dir := filepath.Join(g.top, filepath.FromSlash(prefix))
		if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
			continue // not a directory of the work tree as named
		}
		sum := sha256.Sum256([]byte(prefix))
		index := filepath.Join(g.tmp, "index-"+hex.EncodeToString(sum[:8]))
		inner, err := g.add(ctx, base, dir, index, ".", prefix+"/")
		if err != nil {
			return "", err
		}
		queue = append(queue, inner...)
		t, err := writeTree(index)
		if err != nil {
			return "", err
		}
		nested = append(nested, nestedTree{prefix, t})
	}
	combined := filepath.Join(g.tmp, "index-combined")
	_ = os.Remove(combined)
	if err := g.git(ctx, nil, io.Discard, base, true, g.top, combined, "read-tree", tree); err != nil {
		return "", err
	}
	slices.SortFunc(nested, func(a, b nestedTree) int { return strings.Compare(a.prefix, b.prefix) })
	for _, n := range nested {
		if err := g.git(ctx, nil, io.Discard, base, true, g.top, combined, "read-tree", "--prefix="+n.prefix+"/", n.tree); err != nil {
			return "", err
		}
	}
	return writeTree(combined)
}

// add adds every file under pathspec of the work tree top to index, but
// for the nested repositories under it, whose paths it returns with prefix
// before each: `git add` would record each as a gitlink, or fail on one
// that has no commit yet. They are the directories `git ls-files --others`
// lists with a trailing slash.
func (g *shadowGit) add(ctx context.Context, base bool, top, index, pathspec, prefix string) ([]string, error) {
	var others bytes.Buffer
	if err := g.git(ctx, nil, &others, false, true, top, index, "ls-files", "--others", "--exclude-standard", "-z", "--", pathspec); err != nil {
		return nil, err
	}
	var specs bytes.Buffer
	specs.WriteString(":(literal)" + pathspec + "\x00")
	var nested []string
	for entry := range bytes.SplitSeq(others.Bytes(), []byte{0}) {
		if p, ok := bytes.CutSuffix(entry, []byte{'/'}); ok && len(p) > 0 {
			nested = append(nested, prefix+string(p))
			specs.WriteString(":(exclude,literal)" + string(entry) + "\x00")
		}
	}
	if err := g.git(ctx, &specs, io.Discard, base, false, top, index, "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return nil, err
	}
	tracked, err := g.dropNested(ctx, index, prefix)
	return append(nested, tracked...), err
}

// dropNested removes the nested repositories `git add` just recorded
// (gitlinks) from the private index and returns their paths, with prefix
// before each. The next add would otherwise check whether they are
// modified by running `git status` inside each, with that repository's
// own configuration (fsmonitor, filters, hooks): one that is not in the
// index is recorded again without being run. Their files are added on
// their own (see snapshot).
func (g *shadowGit) dropNested(ctx context.Context, index, prefix string) ([]string, error) {
	var staged bytes.Buffer
	if err := g.git(ctx, nil, &staged, false, true, g.top, index, "ls-files", "--stage", "-z"); err != nil {
		return nil, err
	}
	var nested bytes.Buffer
	var paths []string
	for entry := range bytes.SplitSeq(staged.Bytes(), []byte{0}) {
		// "<mode> <id> <stage>\t<path>"
		if mode, rest, ok := bytes.Cut(entry, []byte{' '}); ok && string(mode) == "160000" {
			if _, path, ok := bytes.Cut(rest, []byte{'\t'}); ok {
				nested.Write(path)
				nested.WriteByte(0)
				paths = append(paths, prefix+string(path))
			}
		}
	}
	if nested.Len() == 0 {
		return nil, nil
	}
	return paths, g.git(ctx, &nested, io.Discard, false, true, g.top, index, "update-index", "--force-remove", "-z", "--stdin")
}

// diffSince writes the diff of the workspace from the snapshot base to now,
// with paths relative to the workspace.
func (g *shadowGit) diffSince(ctx context.Context, base string, out io.Writer) error {
	now, err := g.snapshot(ctx, false)
	if err != nil {
		return err
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
		"--src-prefix=a/", "--dst-prefix=b/"}
	if g.rel != "." {
		args = append(args, "--relative="+g.rel)
	}
	// The private objects are looked up before the alternate's.
	return g.git(ctx, nil, out, true, true, g.top, filepath.Join(g.tmp, "index"), append(args, base, now, "--", g.rel)...)
}

// git runs git in the private repository with a minimal environment, on
// the work tree top with the private index file index, in and out its
// standard input and output. alternate adds the workspace repository's
// objects as a read-only alternate; literal makes every pathspec literal
// (without it, the pathspecs say :(literal) themselves).
func (g *shadowGit) git(ctx context.Context, in io.Reader, out io.Writer, alternate, literal bool, top, index string, args ...string) error {
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"--no-pager"}, args...)...)
	cmd.Stdin = in
	cmd.Dir = g.tmp
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + g.tmp,
		"XDG_CONFIG_HOME=" + g.tmp,
		"LC_ALL=C",
		"GIT_DIR=" + g.gitDir,
		"GIT_WORK_TREE=" + top,
		"GIT_INDEX_FILE=" + index,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_TERMINAL_PROMPT=0",
	}
	if literal {
		cmd.Env = append(cmd.Env, "GIT_LITERAL_PATHSPECS=1")
	}
	if alternate && g.objects != "" {
		cmd.Env = append(cmd.Env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+g.objects)
	}
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errOut
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			return fmt.Errorf("git %s: %w: %s", args[0], err, textclip.Clip(msg, 300))
		}
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	return nil
}

func (g *shadowGit) remove() error { return os.RemoveAll(g.tmp) }
