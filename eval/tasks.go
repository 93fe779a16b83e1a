// Package eval runs a task set against a model: each attempt at a task in
// its own git work tree of the task's repository, several at a time,
// resumable, graded by the task's own test, with the results and summary a
// team compares models by.
package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/trace"
)

// maxTaskFile bounds a task file (and a results file) read into memory.
const maxTaskFile = 256 << 20

// Task is one line of a task file.
type Task struct {
	gen.EvalTask
	// Line is the task's line in its file, for messages.
	Line int
	// Repo is the repository each attempt's work tree is made from: the
	// task's local path made absolute, or a clone of its URL (Prepare).
	Repo string
	// Commit is the full hash the task's commit resolved to, and Objects
	// the object store it is in (Prepare).
	Commit, Objects string
}

// The spec's schemas of a task file's and a results file's lines.
var (
	taskSchema    = trace.NewLineSchema("EvalTask")
	attemptSchema = trace.NewLineSchema("EvalAttempt")
)

// lines splits data into its lines, numbered from 1; blank lines are
// left out, and so is a last line without a newline when torn is set
// (what a crash mid-write leaves; it is returned instead).
func lines(data []byte, torn bool) (out []numbered, rest []byte) {
	for n := 1; len(data) > 0; n++ {
		line, after, found := bytes.Cut(data, []byte("\n"))
		if !found && torn {
			return out, data
		}
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, numbered{n, line})
		}
		data = after
	}
	return out, nil
}

type numbered struct {
	n    int
	text []byte
}

// ReadTasks reads and checks a task file: every line a task (blank lines
// aside), ids unique, local repositories existing directories. A file with
// any bad line is refused whole, each bad line named by its number and
// field, so that nothing starts on a file half right.
func ReadTasks(path string) ([]Task, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	var tasks []Task
	var errs []error
	seen := map[string]int{}
	ls, _ := lines(data, false)
	for _, l := range ls {
		t := Task{Line: l.n}
		if err := taskSchema.Parse(l.text, &t.EvalTask); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, l.n, err))
			continue
		}
		if first, dup := seen[t.Id]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: id: %q is the id of line %d too", path, l.n, t.Id, first))
			continue
		}
		seen[t.Id] = l.n
		if isURL(t.EvalTask.Repo) && !clonable(t.EvalTask.Repo) {
			errs = append(errs, fmt.Errorf("%s:%d: repo: only https, http, ssh, git and file URLs (or user@host:path) are cloned", path, l.n))
			continue
		}
		if !isURL(t.EvalTask.Repo) {
			t.Repo = t.EvalTask.Repo
			if !filepath.IsAbs(t.Repo) {
				t.Repo = filepath.Join(dir, t.Repo)
			}
			if t.Repo, err = filepath.Abs(t.Repo); err == nil {
				var fi os.FileInfo
				if fi, err = os.Stat(t.Repo); err == nil && !fi.IsDir() {
					err = errors.New("not a directory")
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: repo: %w", path, l.n, err))
				continue
			}
		}
		tasks = append(tasks, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no tasks", path)
	}
	return tasks, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	} else if fi.Size() > maxTaskFile {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxTaskFile>>20)
	}
	return os.ReadFile(path)
}

// URL is the task's repository's URL when its repo is one rather than a
// path, else "".
func (t *Task) URL() string {
	if isURL(t.EvalTask.Repo) {
		return t.EvalTask.Repo
	}
	return ""
}

// isURL says whether a task's repo is a git URL rather than a path.
func isURL(repo string) bool {
	return strings.Contains(repo, "://") || strings.HasPrefix(repo, "git@")
}

// clonable says whether a URL names a transport git clones itself; a
// task file (which may come from anywhere) cannot name one that runs a
// program of its choosing, such as ext::.
func clonable(repo string) bool {
	if strings.HasPrefix(repo, "git@") {
		return !strings.Contains(repo, "::")
	}
	scheme, _, _ := strings.Cut(repo, "://")
	return slices.Contains([]string{"https", "http", "ssh", "git", "file"}, scheme)
}

// Prepare makes every task ready to run: a repository given as a URL is
// cloned once (bare, under out/repos), and each task's commit is resolved
// to its hash, so that every attempt starts from the same tree even if a
// branch moves. Errors name the task's line.
func Prepare(ctx context.Context, tasks []Task, out, file string) error {
	var errs []error
	clones := map[string]string{}
	for i := range tasks {
		t := &tasks[i]
		if isURL(t.EvalTask.Repo) {
			if clones[t.EvalTask.Repo] == "" {
				dst := filepath.Join(out, "repos", fmt.Sprintf("%s-%d.git", t.Id, t.Line))
				if err := gitcheckout.CloneBare(ctx, t.EvalTask.Repo, dst); err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: repo: %w", file, t.Line, err))
					continue
				}
				clones[t.EvalTask.Repo] = dst
			}
			t.Repo = clones[t.EvalTask.Repo]
		}
		commit := gen.DefaultEvalTaskCommit
		if t.EvalTask.Commit != nil {
			commit = *t.EvalTask.Commit
		}
		hash, err := gitcheckout.Resolve(ctx, t.Repo, commit)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: commit: %w", file, t.Line, err))
			continue
		}
		if t.Objects, err = gitcheckout.Objects(ctx, t.Repo); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: repo: %w", file, t.Line, err))
			continue
		}
		t.Commit = hash
	}
	return errors.Join(errs...)
}
