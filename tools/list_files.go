package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools/internal/fswalk"
)

var listFilesHandler = Func(NeedsWorkspace, listFiles, renderListFiles)

func listFiles(ctx context.Context, env *Env, in *gen.ListFilesInput) (*gen.ListFilesResult, error) {
	ws := env.Workspace
	rel, err := clean(orDefault(in.Path, ""))
	if err != nil {
		return nil, err
	}
	g, err := compileGlob(orDefault(in.Glob, ""))
	if err != nil {
		return nil, err
	}
	limit := orDefault(in.Limit, defaultListLimit)
	fi, err := ws.root.Stat(rel)
	if err != nil {
		return nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	if !fi.IsDir() {
		return nil, Errorf(gen.ErrorCodeNotADirectory, "%s is not a directory", quote(rel))
	}
	out := &gen.ListFilesResult{Files: []string{}}
	wk := newWalker(ws, g)
	err = wk.Walk(ctx, rel, func(f fswalk.File) bool {
		f.Dir.Release()
		if len(out.Files) == limit {
			out.Truncated = true
			return false
		}
		out.Files = append(out.Files, f.Rel)
		return true
	})
	if err != nil {
		return nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	if wk.Capped {
		out.Truncated = true
	}
	if ns := walkNotes(wk); len(ns) > 0 {
		out.Notes = &ns
	}
	return out, nil
}

// compileGlob checks a glob argument; an empty pattern matches everything
// (nil).
func compileGlob(pattern string) (*fswalk.Glob, error) {
	g, err := fswalk.CompileGlob(pattern)
	if err != nil {
		return nil, Errorf(gen.ErrorCodeInvalidGlob, "the glob %s is malformed: %v", quote(pattern), err)
	}
	return g, nil
}

// newWalker walks the workspace ws for list_files and search, keeping to
// the files g matches, within the walk's caps.
func newWalker(ws *Workspace, g *fswalk.Glob) *fswalk.Walker {
	return &fswalk.Walker{Root: ws.root, Glob: g, MaxEntries: ws.walkMaxEntries, MaxDepth: walkMaxDepth, MaxIgnoreLines: walkMaxIgnoreLines}
}

// walkNotes describes what the walk wk left out, for a result's notes.
func walkNotes(wk *fswalk.Walker) []string {
	var ns []string
	if wk.Capped {
		ns = append(ns, fmt.Sprintf("the walk stopped after %d entries (its cap); narrow it with path or glob", wk.MaxEntries))
	}
	if wk.Unapplied > 0 {
		ns = append(ns, fmt.Sprintf("%s not applied: with %s the .gitignore patterns in effect would pass %d (the first: %s); files they ignore may be listed", plural(wk.Unapplied, ".gitignore file"), pick(wk.Unapplied, "it", "them"), wk.MaxIgnoreLines, quote(wk.FirstIgnore)))
	}
	if wk.Deep > 0 {
		ns = append(ns, fmt.Sprintf("%d %s more than %d levels deep %s not entered (the first: %s)", wk.Deep, pick(wk.Deep, "directory", "directories"), wk.MaxDepth, pick(wk.Deep, "was", "were"), quote(wk.FirstDeep)))
	}
	return ns
}

func renderListFiles(in *gen.ListFilesInput, out *gen.ListFilesResult) string {
	var b strings.Builder
	where := "the workspace"
	if p := orDefault(in.Path, ""); p != "" && p != "." {
		where = p
	}
	switch {
	case len(out.Files) == 0:
		fmt.Fprintf(&b, "no files under %s", where)
		if in.Glob != nil {
			fmt.Fprintf(&b, " match %s", *in.Glob)
		}
		b.WriteString("\n")
	case out.Truncated:
		fmt.Fprintf(&b, "the first %s under %s (the list was cut %s; narrow it with path or glob):\n", plural(len(out.Files), "file"), where, cutWhere(len(out.Files), orDefault(in.Limit, defaultListLimit)))
	default:
		fmt.Fprintf(&b, "%s under %s:\n", plural(len(out.Files), "file"), where)
	}
	for _, f := range out.Files {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	writeNotes(&b, out.Notes)
	return b.String()
}

// cutWhere says where a truncated result of n items, at most limit, was
// cut.
func cutWhere(n, limit int) string {
	if n < limit {
		return "where the walk stopped"
	}
	return "at the limit"
}

// writeNotes appends a result's notes, one a line.
func writeNotes(b *strings.Builder, notes *[]string) {
	for _, n := range orDefault(notes, nil) {
		fmt.Fprintf(b, "[note: %s]\n", n)
	}
}
