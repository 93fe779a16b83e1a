package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/specloop/specloop/internal/textclip"
)

// BaselineKeeper keeps the baseline a run's patch is computed against
// durably, once per run: a Workspace opened again for the same run (by
// another worker, after the first one was killed) computes its patch
// against the recorded baseline, so the patch is the one the run would
// have had on one worker. The embedded engine has none: the baseline then
// lives as long as the Workspace, as it always did.
type BaselineKeeper interface {
	// LoadBaseline returns the recorded baseline; ok is false when none
	// is recorded.
	LoadBaseline(ctx context.Context) (data []byte, ok bool, err error)
	// SaveBaseline records data unless a baseline is recorded already
	// (the first writer's stays: the Workspace reads it back).
	SaveBaseline(ctx context.Context, data []byte) error
}

// ErrBaseline is wrapped by the error of a tool call or a patch whose
// durable baseline (see BaselineKeeper) could not be read, kept or
// rebuilt: the call did not change the workspace, or the patch is not
// given, rather than a patch against the wrong baseline.
var ErrBaseline = errors.New("the patch's baseline")

// KeepBaseline makes k keep the workspace's patch baseline: taken before
// the first tool call that can change files (a file tool's or a command's)
// and saved through k before that call changes anything, or read from k
// when a baseline is recorded there already. Call it before the first
// tool call.
func (w *Workspace) KeepBaseline(k BaselineKeeper) {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	w.base.keeper = k
}

// maxBaselineBytes bounds the content a baseline record carries (the
// objects the workspace's own repository does not hold: the trees and
// files the snapshot had to write). Files over it, the largest first, are
// left out: a Workspace that rebuilds the baseline from the record leaves
// them out of the patch and says the patch may be partial.
var maxBaselineBytes int64 = 32 << 20

// maxBaselineRecord bounds a baseline record as it is kept and as it is
// read: its content (maxBaselineBytes) in base64, with room for the
// pack's framing. A record over it is saved as one that kept nothing.
func maxBaselineRecord() int { return int(2*maxBaselineBytes) + 64<<10 }

// MaxBaselineRecord is the length past which a baseline record is refused
// (a BaselineKeeper need read no more of it).
func MaxBaselineRecord() int { return maxBaselineRecord() }

// baselineVersion is the version of the record's format.
const baselineVersion = 1

// baselineRecord is a run's patch baseline as it is kept (JSON).
type baselineRecord struct {
	Version int `json:"version"`
	// Git says the baseline is a snapshot: the tree Tree of the work tree
	// whose top the workspace is Rel under (slash-separated, "." for the
	// top), whose objects are those of the workspace's repository and
	// those in Pack (a git pack). Without it the patch is the file tools'
	// record, which a Workspace opened again does not have (Why says why).
	Git  bool   `json:"git"`
	Rel  string `json:"rel,omitempty"`
	Tree string `json:"tree,omitempty"`
	Pack []byte `json:"pack,omitempty"`
	// Left is the number of files whose content was over the bound, not
	// in Pack.
	Left int    `json:"left,omitempty"`
	Why  string `json:"why,omitempty"`
	// Index is the private index the snapshot left (the files' stat data
	// and ids), and IndexTime its modification time (Unix nanoseconds):
	// with it, the snapshot at the end of a run that moved reads only the
	// files whose stat data changed, as on the worker that took the
	// baseline, instead of every file. Left out when over the bound.
	Index     []byte `json:"index,omitempty"`
	IndexTime int64  `json:"index_time,omitempty"`
}

// keepBase takes the baseline of a workspace whose keeper has none yet,
// saves it and reads back the one kept (another attempt's, when it was
// first). Called with baseMu held, before the first change.
func (w *Workspace) keepBase(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
	defer cancel()
	rec := baselineRecord{Version: baselineVersion, Why: "not a git work tree"}
	g, err := newShadowGit(w.dir)
	var tree string
	if err == nil {
		tree, err = g.snapshot(ctx, true)
		if err == nil {
			var xerr error
			if rec, xerr = g.export(ctx, tree); xerr != nil {
				// The patch here is exact; one on another worker says it
				// may be partial.
				rec = baselineRecord{Version: baselineVersion, Why: "its objects could not be read"}
			}
			g.keepTrees(ctx, tree)
			tree, err = g.withOriginals(ctx, tree, w.originals())
		}
		if err != nil {
			g.remove()
			g = nil
			rec = baselineRecord{Version: baselineVersion, Why: "the snapshot failed"}
		}
	}
	data, err := json.Marshal(&rec)
	if err == nil && len(data) > maxBaselineRecord() {
		rec = baselineRecord{Version: baselineVersion, Why: fmt.Sprintf("its record is over the bound of %d bytes", maxBaselineRecord())}
		data, err = json.Marshal(&rec)
	}
	if err == nil {
		err = w.base.keeper.SaveBaseline(ctx, data)
	}
	var kept []byte
	if err == nil {
		var ok bool
		kept, ok, err = w.base.keeper.LoadBaseline(ctx)
		if err == nil && !ok {
			err = errors.New("the saved baseline is not there")
		}
	}
	if err != nil {
		if g != nil {
			g.remove()
		}
		return fmt.Errorf("%w: keep it: %w", ErrBaseline, err)
	}
	if !bytes.Equal(kept, data) {
		// Another attempt of the run kept its baseline first.
		if g != nil {
			g.remove()
		}
		w.useBase(ctx, kept)
		return nil
	}
	w.base = patchBase{keeper: w.base.keeper, loaded: true, touched: true, command: true, git: g, tree: tree}
	return nil
}

// loadBase reads the keeper's baseline once, when there is a keeper; its
// error is the keeper's. Called with baseMu held.
func (w *Workspace) loadBase(ctx context.Context) error {
	if w.base.keeper == nil || w.base.loaded {
		return nil
	}
	data, ok, err := w.base.keeper.LoadBaseline(ctx)
	if err != nil {
		return fmt.Errorf("%w: read it: %w", ErrBaseline, err)
	}
	if !ok {
		w.base.loaded = true
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
	defer cancel()
	w.useBase(ctx, data)
	return nil
}

// useBase makes the recorded baseline data the workspace's. A record that
// cannot be used (damaged, or the workspace is no longer where it was
// taken) is the patch's error, never a patch against another baseline; the
// run's calls go on, since no other baseline may be taken.
func (w *Workspace) useBase(ctx context.Context, data []byte) {
	if err := w.importBase(ctx, data); err != nil {
		if w.base.git != nil {
			w.base.git.remove()
		}
		w.base = patchBase{keeper: w.base.keeper, loaded: true, touched: true, command: true, moved: true, broken: err}
	}
}

// importBase makes the recorded baseline data the workspace's: the
// private repository is made afresh with the record's objects in it.
func (w *Workspace) importBase(ctx context.Context, data []byte) error {
	if len(data) > maxBaselineRecord() {
		return fmt.Errorf("%w: the record is over the bound of %d bytes", ErrBaseline, maxBaselineRecord())
	}
	var rec baselineRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return fmt.Errorf("%w: the record: %w", ErrBaseline, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: the record has data after its end", ErrBaseline)
	}
	if rec.Version != baselineVersion {
		return fmt.Errorf("%w: the record's version is %d, not %d", ErrBaseline, rec.Version, baselineVersion)
	}
	base := patchBase{keeper: w.base.keeper, loaded: true, touched: true, command: true, moved: true}
	if !rec.Git {
		base.note = fmt.Sprintf("[patch may be partial: the run moved to another worker, and its baseline was not kept (%s): changes the file tools made before the move are not in it]\n", textclipWhy(rec.Why))
		if w.base.git != nil {
			w.base.git.remove()
		}
		w.base = base
		return nil
	}
	if len(rec.Tree) != 40 || !isHex(rec.Tree) {
		return fmt.Errorf("%w: the record's tree is not an object id", ErrBaseline)
	}
	g, err := newShadowGit(w.dir)
	if err != nil {
		return fmt.Errorf("%w: the workspace is no longer in a git work tree: %w", ErrBaseline, err)
	}
	dropped, err := g.importPack(ctx, &rec)
	if err != nil {
		g.remove()
		return fmt.Errorf("%w: %w", ErrBaseline, err)
	}
	if len(dropped) > 0 {
		base.dropped = dropped
		base.note = fmt.Sprintf("[patch may be partial: the run moved to another worker, and its baseline holds no content for %s (over the record's bound of %d bytes, or no longer in the repository): their changes are not in it]\n", plural(len(dropped), "file"), maxBaselineBytes)
	}
	g.keepTrees(ctx, rec.Tree)
	base.git, base.tree = g, rec.Tree
	if w.base.git != nil {
		w.base.git.remove()
	}
	w.base = base
	return nil
}

// textclipWhy is a record's reason as a note may quote it.
func textclipWhy(s string) string {
	return cmp.Or(textclip.Clip(strings.Map(printable, s), 200), "unknown")
}

func printable(r rune) rune {
	if r < ' ' || r == 0x7f {
		return -1
	}
	return r
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// treeEntry is an entry of `git ls-tree -z`: mode, type, id and path
// (from the top of the work tree).
type treeEntry struct{ mode, kind, id, path string }

// lsTree lists tree recursively (with its subtrees when trees), from the
// top of the work tree.
func (g *shadowGit) lsTree(ctx context.Context, tree string, trees bool) ([]treeEntry, error) {
	args := []string{"ls-tree", "-r", "-z", "--full-tree"}
	if trees {
		args = append(args, "-t")
	}
	var out bytes.Buffer
	if err := g.git(ctx, nil, &out, true, true, g.top, filepath.Join(g.tmp, "index-none"), append(args, tree)...); err != nil {
		return nil, err
	}
	var entries []treeEntry
	for line := range bytes.SplitSeq(out.Bytes(), []byte{0}) {
		if len(line) == 0 {
			continue
		}
		// "<mode> SP <type> SP <id> TAB <path>"
		head, p, ok := bytes.Cut(line, []byte{'\t'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ls-tree: odd entry %q", line)
		}
		entries = append(entries, treeEntry{f[0], f[1], f[2], string(p)})
	}
	return entries, nil
}

// objectSizes asks which of ids the object store holds (with the
// workspace's objects when alternate) and returns the size of each held.
func (g *shadowGit) objectSizes(ctx context.Context, ids []string, alternate bool) (map[string]int64, error) {
	var in, out bytes.Buffer
	for _, id := range ids {
		in.WriteString(id + "\n")
	}
	if err := g.git(ctx, &in, &out, alternate, true, g.top, filepath.Join(g.tmp, "index-none"), "cat-file", "--batch-check", "--buffer"); err != nil {
		return nil, err
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != len(ids)+1 {
		return nil, errors.New("cat-file: short answer")
	}
	held := map[string]int64{}
	for i, l := range lines[:len(ids)] {
		// "<id> <type> <size>", or "<id> missing"
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == ids[i] {
			if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				held[ids[i]] = n
			}
		}
	}
	return held, nil
}

// emptyTree is git's empty tree, which every repository has without
// storing it.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// export returns the record of the baseline snapshot tree: its id and a
// pack of the objects it needs that the workspace's repository does not
// hold (those the snapshot wrote into the private repository), within
// maxBaselineBytes. Called before keepTrees copies the workspace's trees.
func (g *shadowGit) export(ctx context.Context, tree string) (baselineRecord, error) {
	rec := baselineRecord{Version: baselineVersion, Git: true, Rel: g.rel, Tree: tree}
	entries, err := g.lsTree(ctx, tree, true)
	if err != nil {
		return rec, err
	}
	ids := []string{tree}
	kinds := map[string]string{tree: "tree"}
	paths := map[string]int{}
	for _, e := range entries {
		if e.kind != "tree" && e.kind != "blob" {
			continue
		}
		if _, ok := kinds[e.id]; !ok {
			ids = append(ids, e.id)
			kinds[e.id] = e.kind
		}
		paths[e.id]++
	}
	private, err := g.objectSizes(ctx, ids, false)
	if err != nil {
		return rec, err
	}
	// Every tree the private repository holds, then its blobs, the
	// smallest first, while they fit.
	var keep, blobs []string
	total := int64(0)
	for _, id := range ids {
		n, ok := private[id]
		switch {
		case !ok || id == emptyTree:
		case kinds[id] == "tree":
			keep, total = append(keep, id), total+n
		default:
			blobs = append(blobs, id)
		}
	}
	if total > maxBaselineBytes {
		return baselineRecord{Version: baselineVersion, Why: fmt.Sprintf("its trees are over the bound of %d bytes", maxBaselineBytes)}, nil
	}
	slices.SortStableFunc(blobs, func(a, b string) int { return cmp.Compare(private[a], private[b]) })
	for _, id := range blobs {
		if total+private[id] > maxBaselineBytes {
			rec.Left += paths[id]
			continue
		}
		keep, total = append(keep, id), total+private[id]
	}
	// The private index, when it fits: a speed-up only.
	main := filepath.Join(g.tmp, "index")
	if data, fi, err := readSmall(main, maxBaselineBytes-total); err == nil {
		rec.Index, rec.IndexTime = data, fi.ModTime().UnixNano()
	}
	if len(keep) == 0 {
		return rec, nil
	}
	var in, pack bytes.Buffer
	for _, id := range keep {
		in.WriteString(id + "\n")
	}
	if err := g.git(ctx, &in, &pack, false, true, g.top, "", "pack-objects", "--stdout", "-q", "--window=0"); err != nil {
		return rec, err
	}
	rec.Pack = pack.Bytes()
	return rec, nil
}

// importPack puts the record's objects into the private repository (git
// index-pack hashes each: an object is stored under its own id) and
// returns the paths (from the top of the work tree) of the baseline's
// files whose content neither the record nor the workspace's repository
// holds.
func (g *shadowGit) importPack(ctx context.Context, rec *baselineRecord) (map[string]bool, error) {
	if rec.Rel != g.rel {
		return nil, fmt.Errorf("it was taken in a workspace at %q of its work tree, this one is at %q", rec.Rel, g.rel)
	}
	content := int64(len(rec.Index))
	if len(rec.Pack) > 0 {
		var out, idx bytes.Buffer
		if err := g.git(ctx, bytes.NewReader(rec.Pack), &out, false, true, g.top, "", "index-pack", "--stdin"); err != nil {
			return nil, fmt.Errorf("the record's objects: %w", err)
		}
		// Their content within the bound, as export kept it (a pack
		// may inflate far past its own size).
		_, name, _ := strings.Cut(strings.TrimSpace(out.String()), "\t")
		f, err := os.Open(filepath.Join(g.gitDir, "objects", "pack", "pack-"+name+".idx"))
		if err != nil || !isHex(name) {
			return nil, fmt.Errorf("the record's objects: no pack index (%q)", textclip.Clip(out.String(), 80))
		}
		err = g.git(ctx, f, &idx, false, true, g.top, "", "show-index")
		f.Close()
		var ids []string
		for l := range strings.Lines(idx.String()) {
			if f := strings.Fields(l); len(f) >= 2 {
				ids = append(ids, f[1])
			}
		}
		sizes, serr := g.objectSizes(ctx, ids, false)
		if err = errors.Join(err, serr); err != nil {
			return nil, fmt.Errorf("the record's objects: %w", err)
		}
		for _, n := range sizes {
			content += n
		}
	}
	if content > maxBaselineBytes {
		return nil, fmt.Errorf("the record's content is over the bound of %d bytes", maxBaselineBytes)
	}
	if len(rec.Index) > 0 {
		if _, err := parseIndex(rec.Index); err != nil {
			return nil, fmt.Errorf("the record's index: %w", err)
		}
		// Its time as it was, so that git takes the same entries as
		// racily clean as on the worker that wrote it.
		main, t := filepath.Join(g.tmp, "index"), time.Unix(0, rec.IndexTime)
		if err := errors.Join(os.WriteFile(main, rec.Index, 0o600), os.Chtimes(main, t, t)); err != nil {
			return nil, err
		}
	}
	entries, err := g.lsTree(ctx, rec.Tree, false)
	if err != nil {
		return nil, fmt.Errorf("the record's tree: %w", err)
	}
	var ids []string
	seen := map[string]bool{}
	for _, e := range entries {
		if e.kind == "blob" && !seen[e.id] {
			seen[e.id] = true
			ids = append(ids, e.id)
		}
	}
	held, err := g.objectSizes(ctx, ids, true)
	if err != nil {
		return nil, err
	}
	dropped := map[string]bool{}
	for _, e := range entries {
		if _, ok := held[e.id]; e.kind == "blob" && !ok {
			dropped[e.path] = true
		}
	}
	// Fewer than rec.Left may be missing: the run may have added the
	// content to the workspace's repository since.
	return dropped, nil
}

// withEntriesOf returns the tree base with the entries of paths (from the
// top of the work tree) as they are in the tree now (gone when not there):
// the paths whose baseline content is not kept then have no change.
func (g *shadowGit) withEntriesOf(ctx context.Context, base, now string, paths map[string]bool) (string, error) {
	entries, err := g.lsTree(ctx, now, false)
	if err != nil {
		return "", err
	}
	var info bytes.Buffer
	found := map[string]bool{}
	for _, e := range entries {
		if paths[e.path] {
			found[e.path] = true
			fmt.Fprintf(&info, "%s %s\t%s\x00", e.mode, e.id, e.path)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if !found[p] {
			fmt.Fprintf(&info, "0 %040d\t%s\x00", 0, p)
		}
	}
	index := filepath.Join(g.tmp, "index-dropped")
	if err := g.git(ctx, nil, io.Discard, true, true, g.top, index, "read-tree", base); err != nil {
		return "", err
	}
	if err := g.git(ctx, &info, io.Discard, true, true, g.top, index, "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	return g.writeTree(ctx, true, index)
}
