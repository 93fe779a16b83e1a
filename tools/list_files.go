package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/specloop/specloop/gen"
)

var listFilesHandler = Func(NeedsWorkspace, listFiles, renderListFiles)

func listFiles(ctx context.Context, env *Env, in *gen.ListFilesInput) (*gen.ListFilesResult, error) {
	ws := env.Workspace
	rel, err := clean(deref(in.Path))
	if err != nil {
		return nil, err
	}
	g, err := compileGlob(deref(in.Glob))
	if err != nil {
		return nil, err
	}
	limit := listLimit(in)
	fi, err := ws.root.Stat(rel)
	if err != nil {
		return nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	if !fi.IsDir() {
		return nil, Errorf(gen.ErrorCodeNotADirectory, "%s is not a directory", quote(rel))
	}
	out := &gen.ListFilesResult{Files: []string{}}
	wk := &walker{ws: ws, glob: g}
	err = wk.walk(ctx, rel, func(f walkFile) bool {
		f.dir.release()
		if len(out.Files) == limit {
			out.Truncated = true
			return false
		}
		out.Files = append(out.Files, f.rel)
		return true
	})
	if err != nil {
		return nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	if wk.capped {
		out.Truncated = true
	}
	if ns := wk.notes(); len(ns) > 0 {
		out.Notes = &ns
	}
	return out, nil
}

func renderListFiles(in *gen.ListFilesInput, out *gen.ListFilesResult) string {
	var b strings.Builder
	where := "the workspace"
	if p := deref(in.Path); p != "" && p != "." {
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
		why := "at the limit"
		if len(out.Files) < listLimit(in) {
			why = "where the walk stopped"
		}
		fmt.Fprintf(&b, "the first %s under %s (the list was cut %s; narrow it with path or glob):\n", plural(len(out.Files), "file"), where, why)
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

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// writeNotes appends a result's notes, one a line.
func writeNotes(b *strings.Builder, notes *[]string) {
	for _, n := range deref(notes) {
		fmt.Fprintf(b, "[note: %s]\n", n)
	}
}

func listLimit(in *gen.ListFilesInput) int {
	if in.Limit != nil {
		return *in.Limit
	}
	return defaultListLimit
}
