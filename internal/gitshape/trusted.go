package gitshape

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Trusted is a path outside a git directory that a repository's
// configuration makes git run or read as configuration: the hooks
// directory core.hooksPath names (git runs the hooks there for whoever
// commits, checks out or merges), a file include.path or
// includeIf.<condition>.path names (git reads it as the repository's own
// configuration, which can name programs git runs), or the target of a
// hook that is a symbolic link. A write tool or a command that changes
// what is there gets code run, unsandboxed, at the person's next git
// command.
type Trusted struct {
	// Path is absolute and clean; it need not exist.
	Path string
	// Dir: Path is a hooks directory, and every file in it is trusted;
	// else Path is a configuration file, or the target of a hook that is
	// a symbolic link (Link).
	Dir bool
	// Link is the hook that is a symbolic link to Path, for a message
	// (".git/hooks/pre-commit"); Key and Config are then empty.
	Link string
	// Key is the variable that names it, as git spells it
	// ("core.hooksPath", "include.path", `includeIf.gitdir:~/w/.path`).
	Key string
	// Config is where Key is set, for a message: relative to the
	// repository's work tree (".git/config") when it lies inside it, else
	// its base name.
	Config string
}

// Caps of what Repository reads: a configuration file's size, the files
// of one repository (its own, the person's global ones and everything
// they include), and the levels of includes (git's own limit).
const (
	maxConfigSize  = 1 << 20
	maxConfigFiles = 64
	maxIncludes    = 10
)

// PersonConfigs returns the configuration files git reads for every
// repository of the person running this process, from the environment
// git itself looks at: the system file (unless GIT_CONFIG_NOSYSTEM) and
// the global ones. A relative core.hooksPath in one of them is relative
// to each repository's work tree.
func PersonConfigs() []string {
	var files []string
	if v := os.Getenv("GIT_CONFIG_NOSYSTEM"); v == "" || v == "0" || strings.EqualFold(v, "false") {
		if sys := os.Getenv("GIT_CONFIG_SYSTEM"); sys != "" {
			files = append(files, sys)
		} else {
			files = append(files, "/etc/gitconfig")
		}
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(files, g)
	}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files
}

// Enclosing returns the top of the work tree of the repository dir (an
// absolute, clean path) is in: dir itself or the nearest directory above
// it with a .git entry, as git's discovery finds it; "" when there is
// none. It reads no configuration.
func Enclosing(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// GitDir returns the git directory of the work tree top (the directory
// holding the .git entry): .git itself when it is a directory, or where
// a .git file's "gitdir:" line points; "" when there is none.
func GitDir(top string) string {
	dotGit := filepath.Join(top, ".git")
	// Through a symbolic link, as git reads it.
	if fi, err := os.Stat(dotGit); err != nil {
		return ""
	} else if fi.IsDir() {
		return dotGit
	}
	data := readCapped(dotGit, 4096)
	line, _, _ := strings.Cut(string(data), "\n")
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir:")
	if !ok {
		return ""
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return ""
	}
	if !filepath.IsAbs(rest) {
		rest = filepath.Join(top, rest)
	}
	return filepath.Clean(rest)
}

// Repository returns the trusted paths of the repository whose work tree
// top is top: what core.hooksPath, include.path and includeIf.*.path say
// in its configuration (the common directory's config and the
// worktree's config.worktree), in the person's configs (see
// PersonConfigs) and in every file they include, resolved as git does
// (a hooks path relative to the work tree, also to core.worktree when
// set; an include relative to the file that includes it; "~/" from the
// home directory). Every value counts, not only the last one, and every
// includeIf condition is taken as true: the rule errs on trusting more.
// The default hooks directory, inside the git directory, is not listed,
// but the targets of the hooks there and in each hooks path that are
// symbolic links are (a hook linked to scripts/pre-commit runs it).
// Repository runs no git and reads at most maxConfigFiles files of at
// most maxConfigSize bytes (past that, it knows less than git).
func Repository(top string, person []string) []Trusted {
	gitDir := GitDir(top)
	if gitDir == "" {
		return nil
	}
	common := gitDir
	if cd := strings.TrimSpace(string(readCapped(filepath.Join(gitDir, "commondir"), 4096))); cd != "" {
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gitDir, cd)
		}
		common = filepath.Clean(cd)
	}
	r := &repoReader{top: top, gitDir: gitDir, seen: map[string]bool{}}
	r.home, _ = os.UserHomeDir()
	for _, f := range person {
		r.read(f, 0)
	}
	r.read(filepath.Join(common, "config"), 0)
	r.read(filepath.Join(gitDir, "config.worktree"), 0)
	// Every core.worktree counts for every hooks path, wherever it is set.
	for _, h := range r.hooks {
		value := r.expand(h.Path)
		bases := append([]string{top}, r.worktrees...)
		if filepath.IsAbs(value) {
			bases = []string{""}
		}
		for _, b := range bases {
			h.Path = filepath.Clean(filepath.Join(b, value))
			r.out = append(r.out, h)
			// husky 9 points core.hooksPath at .husky/_, whose shims run
			// the hook files of the directory above.
			if filepath.Base(h.Path) == "_" && filepath.Dir(h.Path) != filepath.Clean(b) {
				h.Path = filepath.Dir(h.Path)
				r.out = append(r.out, h)
			}
		}
	}
	// A hook that is a symbolic link runs its target: a script of the
	// work tree, often (ln -s ../../scripts/pre-commit .git/hooks/).
	dirs := []string{filepath.Join(common, "hooks")}
	for _, t := range r.out {
		if t.Dir {
			dirs = append(dirs, t.Path)
		}
	}
	for _, d := range dirs {
		r.out = append(r.out, hookLinks(d, r.display)...)
	}
	return r.out
}

// maxHookEntries bounds the entries of a hooks directory hookLinks reads.
const maxHookEntries = 256

// hookLinks returns the targets of the hooks in dir that are symbolic
// links, with symbolic links resolved.
func hookLinks(dir string, display func(string) string) []Trusted {
	// Not blocking: a FIFO may sit where the directory was.
	f, err := os.OpenFile(dir, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil
	}
	entries, _ := f.ReadDir(maxHookEntries)
	f.Close()
	var out []Trusted
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, e.Name())
		if target, err := filepath.EvalSymlinks(link); err == nil {
			out = append(out, Trusted{Path: target, Link: display(link)})
		}
	}
	return out
}

type repoReader struct {
	top, gitDir, home string
	seen              map[string]bool
	files             int
	hooks             []Trusted // core.hooksPath values as written, resolved once all is read
	worktrees         []string
	out               []Trusted
}

// expand resolves a leading "~/" as git does for paths.
func (r *repoReader) expand(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && r.home != "" {
		return filepath.Join(r.home, rest)
	}
	return p
}

// display names the configuration file for a message: relative to the
// work tree, or to the home directory ("~/.gitconfig"), else by its base
// name.
func (r *repoReader) display(file string) string {
	if rel, ok := Within(r.top, file); ok {
		return rel
	}
	if rel, ok := Within(r.home, file); r.home != "" && ok {
		return "~/" + rel
	}
	return filepath.Base(file)
}

// read reads the configuration file and, to maxIncludes levels, what it
// includes.
func (r *repoReader) read(file string, depth int) {
	file = filepath.Clean(file)
	if r.seen[file] || r.files >= maxConfigFiles || depth > maxIncludes {
		return
	}
	r.seen[file] = true
	data := readCapped(file, maxConfigSize)
	if data == nil {
		return
	}
	r.files++
	shown := r.display(file)
	for _, v := range ParseConfig(data) {
		if v.Bool || v.Value == "" {
			continue
		}
		key := "include.path"
		switch {
		case v.Name == "core.hookspath":
			r.hooks = append(r.hooks, Trusted{Path: v.Value, Dir: true, Key: "core.hooksPath", Config: shown})
			continue
		case v.Name == "core.worktree":
			wt := r.expand(v.Value)
			if !filepath.IsAbs(wt) {
				wt = filepath.Join(r.gitDir, wt)
			}
			r.worktrees = append(r.worktrees, filepath.Clean(wt))
			continue
		case v.Name == "include.path":
		case strings.HasPrefix(v.Name, "includeif.") && strings.HasSuffix(v.Name, ".path") && len(v.Name) >= len("includeif..path"):
			key = "includeIf" + strings.TrimPrefix(v.Name, "includeif") // includeIf.<condition>.path
		default:
			continue
		}
		p := r.expand(v.Value)
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		p = filepath.Clean(p)
		r.out = append(r.out, Trusted{Path: p, Key: key, Config: shown})
		r.read(p, depth+1)
	}
}

// readCapped reads the first limit bytes of the regular file name
// (through symbolic links, as git does); nil when it cannot. Git reads
// all of a larger file: past the cap the rule knows less than git.
func readCapped(name string, limit int64) []byte {
	if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil
	}
	return data
}

// Rel is a trusted path inside a workspace.
type Rel struct {
	Trusted
	// Rel is Path relative to the workspace, slash-separated ("." for the
	// workspace itself).
	Rel string
}

// InWorkspace returns the trusted paths of the repository whose work tree
// top is top (see Repository) that lie inside the workspace directory ws
// (absolute, clean), by their path or with symbolic links resolved (a
// trusted path that is a link inside ws is listed with its target too).
func InWorkspace(ws, top string, person []string) []Rel {
	ts := Repository(top, person)
	if len(ts) == 0 {
		return nil
	}
	bases := []string{ws}
	if real, err := filepath.EvalSymlinks(ws); err == nil && real != ws {
		bases = append(bases, real)
	}
	var out []Rel
	seen := map[string]bool{}
	for _, t := range ts {
		// The path as named, with its directory's links resolved, and
		// where it leads: git reads and runs through symbolic links.
		cands := []string{t.Path}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(t.Path)); err == nil {
			cands = append(cands, filepath.Join(dir, filepath.Base(t.Path)))
		}
		if real, err := filepath.EvalSymlinks(t.Path); err == nil {
			cands = append(cands, real)
		}
		for _, b := range bases {
			for _, c := range cands {
				if rel, ok := Within(b, c); ok && !seen[rel+"\x00"+t.Key] {
					seen[rel+"\x00"+t.Key] = true
					out = append(out, Rel{Trusted: t, Rel: rel})
				}
			}
		}
	}
	return out
}

// Within returns p relative to the directory dir (both absolute and
// clean), slash-separated, when p is dir or below it.
func Within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
