package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools/internal/patchfmt"
)

// maxPatchHeld bounds the bytes one apply_patch call holds in memory: the
// original and the new content of every file it touches. Each file is
// also bounded by maxEditFileSize.
const maxPatchHeld = 64 << 20

var applyPatchHandler = Func(NeedsWorkspace, applyPatch, renderApplyPatch)

// applyPatch applies a patch all or nothing: it parses the whole patch,
// reads every file it touches and computes every file's new content, and
// writes only when all of that succeeded. Any error before the writes
// (syntax, a hunk that does not match, a path the write rules refuse, a
// size cap) leaves every file as it was. Each file is then written
// atomically (a temporary file renamed over it), new and changed files
// first and deletions last; only a failure of the file system itself in
// that last phase can leave some files written and others not.
func applyPatch(ctx context.Context, env *Env, in *gen.ApplyPatchInput) (*gen.ApplyPatchResult, error) {
	ops, err := patchfmt.Parse(in.Patch)
	if err != nil {
		var se *patchfmt.SyntaxError
		if errors.As(err, &se) {
			return nil, Errorf(gen.ErrorCodeInvalidPatch, "the patch is not in the apply_patch format: %v; no file was changed", se)
		}
		return nil, fmt.Errorf("parse the patch: %w", err)
	}
	p := &patchPlan{ws: env.Workspace, files: map[string]*patchFile{}, search: patchfmt.NewBudget()}
	for _, op := range ops {
		if err := p.apply(op); err != nil {
			return nil, err
		}
	}
	if err := p.checkShapes(); err != nil {
		return nil, err
	}
	if err := env.Workspace.changing(ctx); err != nil {
		return nil, err
	}
	if err := p.write(); err != nil {
		return nil, err
	}
	return p.result(), nil
}

// patchPlan is the state of the files a patch touches, computed in memory
// before anything is written.
type patchPlan struct {
	ws    *Workspace
	files map[string]*patchFile
	order []*patchFile // in the order the patch first touches them
	moves []gen.ApplyPatchMove
	held  int64
	// search bounds the hunk search of the whole patch: repeating an
	// operation must not buy a new budget.
	search *patchfmt.Budget
}

// patchFile is one file: as it is on disk and as the patch leaves it.
type patchFile struct {
	rel      string
	onDisk   bool
	mode     fs.FileMode
	original []byte
	exists   bool
	content  []byte
	moved    bool // the source or the destination of a move
}

// file returns the plan's state of rel, reading it from the workspace the
// first time under the write rules of write_file; notFound is the code
// of a missing parent or file ("" when the file may be created).
func (p *patchPlan) file(rel string, notFound gen.ErrorCode) (*patchFile, error) {
	if f, ok := p.files[rel]; ok {
		return f, nil
	}
	exists, mode, err := p.ws.writeTarget(rel, notFound)
	if err != nil {
		return nil, err
	}
	f := &patchFile{rel: rel, onDisk: exists, mode: mode, exists: exists}
	if exists {
		data, err := p.ws.readCapped(rel, maxEditFileSize, "apply_patch", "change it with run_command instead; no file was changed")
		if err != nil {
			return nil, err
		}
		if err := p.hold(rel, len(data)); err != nil {
			return nil, err
		}
		f.original, f.content = data, data
	} else {
		f.mode = 0o644
	}
	p.files[rel] = f
	p.order = append(p.order, f)
	return f, nil
}

// hold counts n more bytes held for rel against maxPatchHeld.
func (p *patchPlan) hold(rel string, n int) error {
	if int64(n) > maxEditFileSize {
		return tooLarge(rel, int64(n), maxEditFileSize, "apply_patch", "that would be its size after the patch; no file was changed")
	}
	p.held += int64(n)
	if p.held > maxPatchHeld {
		return Errorf(gen.ErrorCodeFileTooLarge, "the patch touches files of more than %s in all, which apply_patch does not hold at once (at %s); split it into smaller patches; no file was changed", mib(maxPatchHeld), quote(rel))
	}
	return nil
}

func (p *patchPlan) apply(op patchfmt.Op) error {
	rel, err := clean(op.Path)
	if err != nil {
		return err
	}
	notFound := gen.ErrorCodeNotFound
	if op.Kind == patchfmt.Add {
		notFound = "" // the file may be created
	}
	f, err := p.file(rel, notFound)
	if err != nil {
		return err
	}
	switch op.Kind {
	case patchfmt.Add:
		if err := p.hold(rel, len(op.Content)); err != nil {
			return err
		}
		f.exists, f.content = true, []byte(op.Content)
		return nil
	case patchfmt.Delete:
		if !f.exists {
			return Errorf(gen.ErrorCodeNotFound, "*** Delete File: %s does not exist (line %d of the patch); no file was changed", quote(rel), op.Line)
		}
		f.exists, f.content = false, nil
		return nil
	}
	if !f.exists {
		return Errorf(gen.ErrorCodeNotFound, "*** Update File: %s does not exist (line %d of the patch); create it with *** Add File; no file was changed", quote(rel), op.Line)
	}
	if isBinary(f.content) {
		return Errorf(gen.ErrorCodeBinaryFile, "%s is a binary file; apply_patch changes text files only; no file was changed", quote(rel))
	}
	updated, err := p.search.Apply(string(f.content), op.Hunks)
	if err != nil {
		var ce *patchfmt.ConflictError
		if errors.As(err, &ce) {
			return Errorf(gen.ErrorCodePatchConflict, "*** Update File: %s: %v; no file was changed", quote(rel), ce)
		}
		return fmt.Errorf("apply the patch to %s: %w", rel, err)
	}
	if err := p.hold(rel, len(updated)); err != nil {
		return err
	}
	to := rel
	if op.MoveTo != "" {
		if to, err = clean(op.MoveTo); err != nil {
			return err
		}
	}
	if to == rel {
		f.content = []byte(updated)
		return nil
	}
	g, err := p.file(to, "")
	if err != nil {
		return err
	}
	g.exists, g.content, g.mode, g.moved = true, []byte(updated), f.mode, true
	f.exists, f.content, f.moved = false, nil, true
	p.moves = append(p.moves, gen.ApplyPatchMove{From: rel, To: to})
	return nil
}

// checkShapes refuses a patch that would make one path both a file and a
// directory (Add File a, then Add File a/b), or whose files, as a whole,
// would leave a directory looking like a git directory (each file alone
// may not).
func (p *patchPlan) checkShapes() error {
	var written []string
	for _, f := range p.order {
		if !f.exists {
			continue
		}
		written = append(written, f.rel)
		for dir := path.Dir(f.rel); dir != "."; dir = path.Dir(dir) {
			if g, ok := p.files[dir]; ok && g.exists {
				return Errorf(gen.ErrorCodeInvalidPatch, "the patch makes %s a file and also creates %s inside it; no file was changed", quote(dir), quote(f.rel))
			}
		}
	}
	return p.ws.gitShaped(written)
}

// write carries the plan out: every new or changed file, then every
// deletion.
func (p *patchPlan) write() error {
	for _, f := range p.order {
		if !f.exists || f.onDisk && bytes.Equal(f.content, f.original) {
			continue
		}
		if err := p.ws.writeAtomic(f.rel, f.content, f.mode); err != nil {
			return err
		}
		p.ws.remember(f.rel, f.onDisk, f.original)
	}
	for _, f := range p.order {
		if f.exists || !f.onDisk {
			continue
		}
		if err := p.ws.root.Remove(f.rel); err != nil {
			return fsError(err, f.rel, gen.ErrorCodeNotFound)
		}
		p.ws.remember(f.rel, true, f.original)
	}
	return nil
}

func (p *patchPlan) result() *gen.ApplyPatchResult {
	out := &gen.ApplyPatchResult{Added: []string{}, Updated: []string{}, Deleted: []string{}, Moved: append([]gen.ApplyPatchMove{}, p.moves...)}
	for _, f := range p.order {
		switch {
		case f.moved:
		case f.exists && !f.onDisk:
			out.Added = append(out.Added, f.rel)
		case f.exists:
			out.Updated = append(out.Updated, f.rel)
		case f.onDisk:
			out.Deleted = append(out.Deleted, f.rel)
		}
	}
	return out
}

func renderApplyPatch(_ *gen.ApplyPatchInput, out *gen.ApplyPatchResult) string {
	var b strings.Builder
	b.WriteString("applied the patch:\n")
	for i, paths := range [][]string{out.Added, out.Updated, out.Deleted} {
		for _, p := range paths {
			fmt.Fprintf(&b, "%c %s\n", "AMD"[i], p)
		}
	}
	for _, m := range out.Moved {
		fmt.Fprintf(&b, "R %s -> %s\n", m.From, m.To)
	}
	return b.String()
}
