package runner

import (
	"os"
	"path/filepath"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/config"
	"github.com/specloop/specloop/internal/projectdocs"
	"github.com/specloop/specloop/internal/textclip"
)

// ProjectDocs reads the project docs of a run in workspace (the user's
// AGENTS.md and the repository's, see projectdocs) into its task's
// instructions, in front of those the request gives, unless the request
// turns them off; it returns the task and the files read, for
// run_started. A host that confines its runs to their workspace (the
// server, the Temporal workers) gives the workspace's open root instead:
// the run then reads nothing above the workspace, and only through root.
func ProjectDocs(req *gen.CreateRunRequest, workspace string, root *os.Root) (gen.Task, []gen.ProjectDoc, error) {
	task := req.Task
	if req.ProjectDocs != nil && !*req.ProjectDocs {
		return task, nil, nil
	}
	user := ""
	if dir, err := config.UserDir(); err == nil {
		user = filepath.Join(dir, "AGENTS.md")
	}
	var docs projectdocs.Docs
	var err error
	if root != nil {
		docs, err = projectdocs.LoadWorkspace(user, root, deref(req.ProjectDocsLimit))
	} else {
		docs, err = projectdocs.Load(user, workspace, deref(req.ProjectDocsLimit))
	}
	if err != nil {
		return task, nil, err
	}
	files := make([]gen.ProjectDoc, len(docs.Files))
	for i, f := range docs.Files {
		files[i] = gen.ProjectDoc{Path: f.Path, Size: f.Size, Sha256: f.SHA256}
		if f.Cut {
			files[i].Cut = &f.Cut
		}
		if f.Refused != "" {
			files[i].Refused = ptr(textclip.Clip(f.Refused, 256))
		}
	}
	if docs.Text != "" {
		text := docs.Text
		if own := deref(task.Instructions); own != "" {
			text += "\n\n" + own
		}
		task.Instructions = &text
	}
	return task, files, nil
}
