package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/specloop/specloop/gen"
)

const defaultListLimit = 1000

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
	limit := defaultListLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	fi, err := ws.root.Stat(rel)
	if err != nil {
		return nil, fsError(err, rel, codeNotFound)
	}
	if !fi.IsDir() {
		return nil, Errorf(codeNotDirectory, "%s is not a directory", quote(rel))
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
		return nil, fsError(err, rel, codeNotFound)
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
		fmt.Fprintf(&b, "the first %s under %s (the list was cut at the limit; narrow it with path or glob):\n", plural(len(out.Files), "file"), where)
	default:
		fmt.Fprintf(&b, "%s under %s:\n", plural(len(out.Files), "file"), where)
	}
	for _, f := range out.Files {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	return b.String()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
