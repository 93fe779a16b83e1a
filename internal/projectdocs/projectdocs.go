// Package projectdocs reads the instructions a person leaves for agents in
// AGENTS.md files: the user's own, and those of the repository from its
// root down to the workspace, merged root first and capped, the files
// farthest from the workspace cut first.
package projectdocs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitshape"
	"github.com/specloop/specloop/internal/textclip"
)

// DefaultLimit is the most bytes of instructions a run gets unless it says
// otherwise: the spec's default of project_docs_limit (Codex's cap).
const DefaultLimit = gen.DefaultCreateRunRequestProjectDocsLimit

// Names are the files read in each directory, the first that exists: an
// override takes the place of the directory's AGENTS.md.
var Names = []string{"AGENTS.override.md", "AGENTS.md"}

// File is one file that was read.
type File struct {
	// Path is the file's path: for the user's file absolute, or ~/... under
	// the home directory; else from the repository root (from the
	// workspace when it is in no repository, or when read by
	// LoadWorkspace).
	Path   string
	Size   int
	SHA256 string
	// Cut is true when the file was left out, or cut short, to fit the
	// limit.
	Cut bool
	// Refused says why a file that exists was not read (a symbolic link
	// out of the repository, not a regular file); it is then left out.
	Refused string
}

// Docs is the merged instructions and the files they came from, farthest
// from the workspace first.
type Docs struct {
	Text  string
	Files []File
}

// Load reads userFile (the user's own instructions; "" for none) and, in
// each directory from the repository root that holds workspace (the
// nearest directory above it with a .git) down to workspace, the first of
// Names that exists. Repository files are read through an os.Root of the
// repository (of the workspace when it is in no repository), so a symbolic
// link cannot bring in a file from outside it. The text is the files in
// that order, each under a line naming it; when it would exceed limit
// bytes (0 means DefaultLimit) the files farthest from the workspace are
// left out first, and the nearest one is cut short if it alone is over.
func Load(userFile, workspace string, limit int) (Docs, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return Docs{}, fmt.Errorf("project docs: %w", err)
	}
	top := RepoRoot(ws)
	root, err := os.OpenRoot(top)
	if err != nil {
		return Docs{}, fmt.Errorf("project docs: %w", err)
	}
	defer root.Close()
	rel, _ := filepath.Rel(top, ws)
	dirs := []string{"."}
	if rel != "." {
		for i, elems := 0, strings.Split(rel, string(filepath.Separator)); i < len(elems); i++ {
			dirs = append(dirs, filepath.Join(elems[:i+1]...))
		}
	}
	return load(userFile, root, dirs, limit)
}

// LoadWorkspace is Load for a host that confines a run to its workspace,
// the open directory root (the server): it reads the user's file and the
// workspace's own, never a directory above it, through root only.
func LoadWorkspace(userFile string, root *os.Root, limit int) (Docs, error) {
	return load(userFile, root, []string{"."}, limit)
}

// load reads userFile and the first of Names in each of dirs (of root,
// outermost first).
func load(userFile string, root *os.Root, dirs []string, limit int) (Docs, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	type part struct {
		file File
		text string
	}
	var parts []part
	if userFile != "" {
		data, err := os.ReadFile(userFile)
		switch {
		case err == nil:
			parts = append(parts, part{File{Path: homeRelative(userFile)}, string(data)})
		case !errors.Is(err, fs.ErrNotExist):
			return Docs{}, fmt.Errorf("project docs: %w", err)
		}
	}
	for _, d := range dirs {
		for _, name := range Names {
			p := filepath.Join(d, name)
			text, err := readFile(root, p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			f := File{Path: filepath.ToSlash(p)}
			if err != nil {
				f.Refused = err.Error()
			}
			parts = append(parts, part{f, text})
			break
		}
	}

	// Keep the nearest files that fit, from the workspace outwards.
	var docs Docs
	kept := make([]string, len(parts))
	budget := limit
	for i := len(parts) - 1; i >= 0; i-- {
		p := &parts[i]
		sum := sha256.Sum256([]byte(p.text))
		p.file.Size, p.file.SHA256 = len(p.text), hex.EncodeToString(sum[:])
		if p.file.Refused != "" {
			continue
		}
		// Each block and the blank line that separates it from the next.
		block := "# Instructions from " + p.file.Path + "\n\n" + strings.TrimRight(p.text, "\n") + "\n\n"
		switch {
		case len(block) <= budget:
			kept[i], budget = block, budget-len(block)
		case budget == limit: // the nearest file alone is over: its beginning
			kept[i], budget, p.file.Cut = textclip.Head(block, limit), 0, true
		default:
			p.file.Cut = true
		}
	}
	for i, p := range parts {
		docs.Files = append(docs.Files, p.file)
		docs.Text += kept[i]
	}
	docs.Text = strings.TrimRight(docs.Text, "\n")
	return docs, nil
}

// homeRelative writes a path under the home directory as ~/..., so a
// record of it does not name the user.
func homeRelative(path string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	if rel, ok := gitshape.Within(home, path); ok {
		return "~/" + rel
	}
	return path
}

// maxFileBytes bounds what is read of one file: more than any limit.
const maxFileBytes = 1 << 20

func readFile(root *os.Root, name string) (string, error) {
	f, err := root.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	return string(data), err
}

// RepoRoot is the repository that holds dir: the nearest directory from dir
// upwards that holds a .git (a directory, or a worktree's file), else dir
// itself. dir is absolute.
func RepoRoot(dir string) string {
	if top := gitshape.Enclosing(dir); top != "" {
		return top
	}
	return dir
}
