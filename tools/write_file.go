package tools

import (
	"context"
	"fmt"

	"github.com/specloop/specloop/gen"
)

var writeFileHandler = Func(NeedsWorkspace, writeFile, renderWriteFile)

func writeFile(ctx context.Context, env *Env, in *gen.WriteFileInput) (*gen.WriteFileResult, error) {
	ws := env.Workspace
	rel, err := clean(in.Path)
	if err != nil {
		return nil, err
	}
	if n := int64(len(in.Content)); n > maxWriteFileSize {
		return nil, Errorf(gen.ErrorCodeFileTooLarge, "the content for %s is %s, over the %s that write_file writes; nothing was written", quote(rel), mib(n), mib(maxWriteFileSize))
	}
	exists, mode, err := ws.writeTarget(rel, "")
	if err != nil {
		return nil, err
	}
	var old []byte
	if exists {
		if old, err = ws.readCapped(rel, maxWriteFileSize, "write_file", "change it with edit_file, or delete it with run_command first"); err != nil {
			return nil, err
		}
	} else {
		mode = 0o644
	}
	if err := ws.changing(ctx); err != nil {
		return nil, err
	}
	content := []byte(in.Content)
	if err := ws.writeAtomic(rel, content, mode); err != nil {
		return nil, err
	}
	ws.remember(rel, exists, old)
	out := &gen.WriteFileResult{Path: rel, Created: !exists, Bytes: len(content)}
	if exists {
		out.Diff = fileDiff(rel, old, true, content, true)
	}
	return out, nil
}

func renderWriteFile(_ *gen.WriteFileInput, out *gen.WriteFileResult) string {
	switch {
	case out.Created:
		return fmt.Sprintf("created %s (%s)\n", out.Path, plural(out.Bytes, "byte"))
	case out.Diff == "":
		return fmt.Sprintf("wrote %s (%s): the content is unchanged\n", out.Path, plural(out.Bytes, "byte"))
	}
	added, removed := diffStat(out.Diff)
	return fmt.Sprintf("wrote %s (%s, +%d -%d lines):\n%s", out.Path, plural(out.Bytes, "byte"), added, removed, out.Diff)
}
