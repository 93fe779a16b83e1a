package tools

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
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
// In a git work tree it is `git diff` of what the run changed, new files
// and changes made by commands included and changes that were there before
// the run not, computed in a private repository the runtime creates in a
// temporary directory (removed by Workspace.Close): nothing of the
// workspace's own repository is run, read as configuration or changed.
// Its cost follows what changed: until a command runs, the file tools'
// record names every changed file, and git diffs just those (see
// toolDiff); before the first command, a snapshot of the workspace is taken
// that hashes only what the workspace's own index, read as data, does not
// vouch for (see seed), and another at the end; with a BaselineKeeper
// (see KeepBaseline) the first snapshot is taken before the first change
// and kept there. Elsewhere, or when git
// fails, it is the diff of every file the file tools changed, against its
// content before their first change.
func (r *Runtime) Patch(ctx context.Context) (string, error) {
	if r.env.Workspace == nil {
		return "", nil
	}
	return r.env.Workspace.patch(ctx)
}

// patchBase is what a run's patch is computed against. Until a command
// runs, the file tools' record of the originals they replaced is all it
// needs: the patch then costs what those files cost (see toolDiff). A
// command can change any file, so before the first one the base becomes a
// snapshot of the workspace in the private repository (see snapshot), the
// originals of the files the tools changed already put back in it.
//
// Why this and not a stat baseline of every file: a command's changes
// need the originals of the files it changed, which only a copy taken
// before it holds, so a baseline would still hash every file or take the
// originals from the workspace's own objects, as the seeded snapshot does
// (see seed) with git doing the stat comparison and the diff. The base is
// a value (the tree's id in the private repository, and the file tools'
// record), so it is kept once per run when a BaselineKeeper is given
// (see KeepBaseline): the snapshot is then taken before the first change
// of any tool, and a Workspace opened again for the run rebuilds it from
// the keeper's record.
type patchBase struct {
	touched bool       // a tool that can change files was called
	command bool       // and a command: git and tree are its snapshot
	git     *shadowGit // nil outside git, or when the snapshot failed
	tree    string

	// keeper keeps the base durably (see BaselineKeeper): the snapshot
	// is then taken before the first change of any tool, and loaded says
	// the keeper's record was read (or this base kept there).
	keeper BaselineKeeper
	loaded bool
	// moved says the base was rebuilt from the keeper's record; dropped
	// holds the paths (from the top of the work tree) whose baseline
	// content the record does not carry, left out of the patch, and note
	// what the patch then says.
	moved   bool
	dropped map[string]bool
	note    string
	// broken is the error of a record that could not be used: the
	// patch's error.
	broken error
}

// changing is called before a file tool's call that may change files.
func (w *Workspace) changing(ctx context.Context) error {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if w.base.keeper != nil {
		return w.keptBase(ctx)
	}
	w.base.touched = true
	return nil
}

// running is called before a command runs: the first time, it takes the
// snapshot the patch is computed against.
func (w *Workspace) running(ctx context.Context) error {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if w.base.keeper != nil {
		return w.keptBase(ctx)
	}
	if w.base.command {
		return nil
	}
	w.base.touched, w.base.command = true, true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
	defer cancel()
	g, err := newShadowGit(w.dir)
	if err != nil {
		return nil // not in a git work tree, or no git: the file tools' record
	}
	tree, err := g.snapshot(ctx, true)
	if err == nil {
		g.keepTrees(ctx, tree)
		tree, err = g.withOriginals(ctx, tree, w.originals())
	}
	if err != nil {
		g.remove()
		return nil
	}
	w.base.git, w.base.tree = g, tree
	return nil
}

// keptBase makes sure, before a change, that the base is the keeper's:
// read from it, or taken now and kept there.
func (w *Workspace) keptBase(ctx context.Context) error {
	if err := w.loadBase(ctx); err != nil {
		return err
	}
	if w.base.command {
		return nil
	}
	return w.keepBase(ctx)
}

func (w *Workspace) patch(ctx context.Context) (string, error) {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if err := w.loadBase(ctx); err != nil {
		return "", err
	}
	if w.base.broken != nil {
		return "", w.base.broken
	}
	if !w.base.touched {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, patchTimeout)
	defer cancel()
	out := newCapture(maxPatchBytes, 0)
	err := errors.New("not a git work tree")
	if w.base.git != nil {
		err = w.base.git.diffSince(ctx, w.base.tree, w.base.dropped, out)
	} else if !w.base.command {
		if g, gerr := newShadowGit(w.dir); gerr == nil {
			err = g.toolDiff(ctx, w.originals(), out)
			g.remove()
		}
	}
	if err != nil {
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
	return p + w.base.note, nil
}

// removeGit removes the private repository of the patch's snapshots.
func (w *Workspace) removeGit() error {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if w.base.git == nil {
		return nil
	}
	err := w.base.git.remove()
	w.base.git = nil
	return err
}

// originals returns the file tools' record: each file's state before their
// first change, by workspace-relative path.
func (w *Workspace) originals() map[string]originalFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.original)
}

// toolPatch diffs the files the file tools changed against their originals.
func (w *Workspace) toolPatch(out io.Writer) error {
	originals := w.originals()
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
//   - The commands used (add, ls-files, update-index, check-ignore,
//     hash-object --no-filters, cat-file --batch-check, read-tree,
//     write-tree, pack-objects, index-pack, diff of two trees) run no
//     hooks and spawn no helpers; .gitignore files are
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
		if b, _, err := readSmall(filepath.Join(common, "info", "exclude"), maxExcludeBytes); err == nil {
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
	if cd, _, err := readSmall(filepath.Join(gd, "commondir"), 4096); err == nil {
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

// readSmall reads the regular file p, and returns its stat data, when it
// is at most max bytes; a FIFO or a device is refused without blocking on
// it.
func readSmall(p string, max int64) ([]byte, fs.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, nil, fs.ErrInvalid
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	return data, fi, err
}

// maxNested bounds the nested repositories a snapshot reads; past it
// their files are left out of the patch.
const maxNested = 256

// snapshot writes the current state of the workspace (every file that is
// not ignored) as a tree of the private repository and returns its id. The
// first one starts from the workspace's own index (see seed), and the
// private index persists between snapshots, so only files whose stat data
// changed are read.
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
	if base && g.seed(ctx, main) != nil {
		_ = os.Remove(main) // a fresh index: every file is hashed
	}
	queue, err := g.add(ctx, base, g.top, main, g.rel, "")
	if err != nil {
		return "", err
	}
	tree, err := g.writeTree(ctx, base, main)
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
		t, err := g.writeTree(ctx, base, index)
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
	return g.writeTree(ctx, base, combined)
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

// keepTrees copies the trees of the snapshot tree that only the
// workspace repository's object directory holds into the private
// repository, as one pack: the next snapshot (which does not read that
// directory) then writes only the trees of the directories that changed,
// instead of all of them as loose objects (seconds on a large tree).
// index-pack hashes every object it stores, so an object planted in the
// workspace under a tree's id is stored under its own id instead, and the
// next snapshot writes the tree it computes. Failing leaves that cost.
func (g *shadowGit) keepTrees(ctx context.Context, tree string) {
	if g.objects == "" {
		return
	}
	var pack bytes.Buffer
	if g.git(ctx, strings.NewReader(tree+"\n"), &pack, true, true, g.top, "", "pack-objects", "--revs", "--filter=blob:none", "--window=0", "--stdout", "-q") == nil {
		_ = g.git(ctx, &pack, io.Discard, false, true, g.top, "", "index-pack", "--stdin")
	}
}

// diffSince writes the diff of the workspace from the snapshot base to now,
// with paths relative to the workspace, but for the paths in dropped
// (from the top of the work tree), whose base content is not known.
func (g *shadowGit) diffSince(ctx context.Context, base string, dropped map[string]bool, out io.Writer) error {
	now, err := g.snapshot(ctx, false)
	if err != nil {
		return err
	}
	if len(dropped) > 0 {
		if base, err = g.withEntriesOf(ctx, base, now, dropped); err != nil {
			return err
		}
	}
	return g.diff(ctx, base, now, out)
}

// diff writes the diff from the tree old to the tree now, with paths
// relative to the workspace.
func (g *shadowGit) diff(ctx context.Context, old, now string, out io.Writer) error {
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
		"--src-prefix=a/", "--dst-prefix=b/"}
	if g.rel != "." {
		args = append(args, "--relative="+g.rel)
	}
	// The private objects are looked up before the alternate's.
	return g.git(ctx, nil, out, true, true, g.top, filepath.Join(g.tmp, "index"), append(args, old, now, "--", g.rel)...)
}

// writeTree writes the private index file index as a tree and returns its
// id; alternate as for git.
func (g *shadowGit) writeTree(ctx context.Context, alternate bool, index string) (string, error) {
	var tree bytes.Buffer
	// Unchanged files may be in the alternate only.
	if err := g.git(ctx, nil, &tree, alternate, true, g.top, index, "write-tree", "--missing-ok"); err != nil {
		return "", err
	}
	return strings.TrimSpace(tree.String()), nil
}

// toolDiff writes the diff of the files the file tools changed
// (originals, by workspace-relative path) when no command ran: a tree of
// just those files as they are now, another of them as they were, and git's
// diff between the two, which is `git diff` of the whole workspace since
// nothing else changed. Files the ignore rules exclude are left out.
func (g *shadowGit) toolDiff(ctx context.Context, originals map[string]originalFile, out io.Writer) error {
	paths, err := g.notIgnored(ctx, originals)
	if err != nil {
		return err
	}
	index := filepath.Join(g.tmp, "index-tools")
	var list bytes.Buffer
	for _, p := range paths {
		list.WriteString(path.Join(g.rel, p) + "\x00")
	}
	if err := g.git(ctx, &list, io.Discard, false, true, g.top, index, "update-index", "--add", "--remove", "-z", "--stdin"); err != nil {
		return err
	}
	now, err := g.writeTree(ctx, false, index)
	if err != nil {
		return err
	}
	old, err := g.withOriginals(ctx, now, originals)
	if err != nil {
		return err
	}
	return g.diff(ctx, old, now, out)
}

// withOriginals returns the tree tree with the files in originals (by
// workspace-relative path) as they were before the file tools changed them
// (gone if they did not exist), but for those the ignore rules exclude.
func (g *shadowGit) withOriginals(ctx context.Context, tree string, originals map[string]originalFile) (string, error) {
	paths, err := g.notIgnored(ctx, originals)
	if err != nil || len(paths) == 0 {
		return tree, err
	}
	index := filepath.Join(g.tmp, "index-originals")
	if err := g.git(ctx, nil, io.Discard, true, true, g.top, index, "read-tree", tree); err != nil {
		return "", err
	}
	data, _, err := readSmall(index, maxIndexBytes)
	if err != nil {
		return "", err
	}
	entries, err := parseIndex(data)
	if err != nil {
		return "", err
	}
	modes := map[string]uint32{}
	for _, e := range entries {
		modes[e.path] = binary.BigEndian.Uint32(e.stat[24:])
	}
	// Each original that existed, in a file of its own, hashed into the
	// private repository.
	dir := filepath.Join(g.tmp, "originals")
	var names, info bytes.Buffer
	var existed []string
	for i, p := range paths {
		o, p := originals[p], path.Join(g.rel, p)
		if !o.existed {
			fmt.Fprintf(&info, "0 %040d\t%s\x00", 0, p)
			continue
		}
		name := filepath.Join(dir, strconv.Itoa(i))
		if err := errors.Join(os.MkdirAll(dir, 0o700), os.WriteFile(name, o.content, 0o600)); err != nil {
			return "", err
		}
		names.WriteString(name + "\n")
		existed = append(existed, p)
	}
	var ids bytes.Buffer
	if err := g.git(ctx, &names, &ids, false, true, g.top, index, "hash-object", "-w", "--no-filters", "--stdin-paths"); err != nil {
		return "", err
	}
	hashed := strings.Fields(ids.String())
	if len(hashed) != len(existed) {
		return "", errors.New("hash-object: short answer")
	}
	for i, id := range hashed {
		mode := cmp.Or(modes[existed[i]], 0o100644)
		fmt.Fprintf(&info, "%o %s\t%s\x00", mode, id, existed[i])
	}
	if err := g.git(ctx, &info, io.Discard, false, true, g.top, index, "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	return g.writeTree(ctx, false, index)
}

// notIgnored returns the paths of originals (workspace-relative, sorted)
// that no ignore rule excludes.
func (g *shadowGit) notIgnored(ctx context.Context, originals map[string]originalFile) ([]string, error) {
	var in, ignored bytes.Buffer
	paths := slices.Sorted(maps.Keys(originals))
	for _, p := range paths {
		// check-ignore takes no literal pathspecs; after "top", nothing of
		// the path is magic.
		in.WriteString(":(top)" + path.Join(g.rel, p) + "\x00")
	}
	// It exits 1 when no path is ignored.
	err := g.git(ctx, &in, &ignored, false, false, g.top, filepath.Join(g.tmp, "index-none"), "check-ignore", "-z", "--stdin")
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 1 {
		err = nil
	}
	skip := strings.Split(ignored.String(), "\x00")
	return slices.DeleteFunc(paths, func(p string) bool { return slices.Contains(skip, ":(top)"+path.Join(g.rel, p)) }), err
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
