package tools

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
	"golang.org/x/sys/unix"
)

const (
	defaultSearchLimit = 200
	// searchLineLen is how much of a matching line a result shows.
	searchLineLen = 300
	// maxSearchFileSize: larger files are not searched (they would be read
	// whole into memory).
	maxSearchFileSize = 256 << 20
)

var searchHandler = Func(NeedsWorkspace, search, renderSearch)

func search(ctx context.Context, env *Env, in *gen.SearchInput) (*gen.SearchResult, error) {
	m, err := compileMatcher(in.Pattern, deref(in.Regex), deref(in.IgnoreCase))
	if err != nil {
		return nil, err
	}
	rel, err := clean(deref(in.Path))
	if err != nil {
		return nil, err
	}
	g, err := compileGlob(deref(in.Glob))
	if err != nil {
		return nil, err
	}
	limit := defaultSearchLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	s := &searcher{ws: env.Workspace, m: m, glob: g, limit: limit}
	matches, truncated, err := s.run(ctx, rel)
	if err != nil {
		return nil, err
	}
	return &gen.SearchResult{Matches: matches, Truncated: truncated}, nil
}

// searcher runs one search over the workspace: a walker goroutine lists the
// files in path order, workers read and match them in parallel, and the
// caller collects the results back in path order, stopping everything once
// the limit is passed.
type searcher struct {
	ws      *Workspace
	m       *matcher
	glob    *glob
	limit   int
	workers int // 0: GOMAXPROCS
}

type searchJob struct {
	idx int
	f   walkFile
}

type searchDone struct {
	idx     int
	matches []gen.SearchMatch
}

// run searches the file or directory rel.
func (s *searcher) run(parent context.Context, rel string) ([]gen.SearchMatch, bool, error) {
	fi, err := s.ws.root.Stat(rel)
	if err != nil {
		return nil, false, fsError(err, rel, codeNotFound)
	}
	if !fi.IsDir() {
		// A file named explicitly is searched even when ignored; one that
		// is not a regular file has nothing to match.
		data, _, err := s.ws.readRegular(rel)
		var te *Error
		if errors.As(err, &te) && te.Code == codeNotRegular {
			return s.cut(nil)
		}
		if err != nil {
			return nil, false, err
		}
		return s.cut(newSearchWorker(s).matches(data, rel))
	}

	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	jobs := make(chan searchJob, 512)
	done := make(chan searchDone, 512)
	var walkErr error
	go func() {
		defer close(jobs)
		n := 0
		wk := &walker{ws: s.ws, glob: s.glob}
		walkErr = wk.walk(ctx, rel, func(f walkFile) bool {
			select {
			case jobs <- searchJob{idx: n, f: f}:
				n++
				return true
			case <-ctx.Done():
				f.dir.release()
				return false
			}
		})
	}()
	workers := s.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newSearchWorker(s)
			for j := range jobs {
				var ms []gen.SearchMatch
				if ctx.Err() == nil {
					ms = w.file(j.f.dir, j.f.name, j.f.rel)
				}
				j.f.dir.release()
				done <- searchDone{idx: j.idx, matches: ms}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()

	// Collect in path order: a file's matches are taken once every file
	// before it is done.
	var (
		out       = []gen.SearchMatch{}
		pending   = map[int][]gen.SearchMatch{}
		next      = 0
		truncated = false
	)
	for d := range done {
		if truncated {
			continue // draining
		}
		pending[d.idx] = d.matches
		for {
			ms, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			out = append(out, ms...)
			if len(out) > s.limit {
				out, truncated = out[:s.limit], true
				cancel()
				break
			}
		}
	}
	if err := parent.Err(); err != nil {
		return nil, false, err
	}
	if walkErr != nil && !truncated {
		return nil, false, fsError(walkErr, rel, codeNotFound)
	}
	return out, truncated, nil
}

func (s *searcher) cut(ms []gen.SearchMatch) ([]gen.SearchMatch, bool, error) {
	if ms == nil {
		ms = []gen.SearchMatch{}
	}
	if len(ms) > s.limit {
		return ms[:s.limit], true, nil
	}
	return ms, false, nil
}

// searchWorker reads and matches files with buffers of its own.
type searchWorker struct {
	s   *searcher
	buf []byte
	st  scanState
}

func newSearchWorker(s *searcher) *searchWorker {
	return &searchWorker{s: s, buf: make([]byte, 64<<10)}
}

// file searches the file name of dir (rel in the workspace). Files that are
// not regular, too large, unreadable or binary have no matches.
func (w *searchWorker) file(dir *dirHandle, name, rel string) []gen.SearchMatch {
	fd, size, err := dir.openFile(name)
	if err != nil {
		return nil
	}
	data, ok := w.read(fd, size)
	unix.Close(fd)
	if !ok {
		return nil
	}
	return w.matches(data, rel)
}

// matches matches the content of the file rel; binary files have none.
func (w *searchWorker) matches(data []byte, rel string) []gen.SearchMatch {
	if isBinary(data) {
		return nil
	}
	var ms []gen.SearchMatch
	w.s.m.match(&w.st, data, w.s.limit+1, func(lm lineMatch) {
		ms = append(ms, gen.SearchMatch{Path: rel, Line: lm.line, Text: clipAround(lm.text, lm.col, searchLineLen)})
	})
	return ms
}

// read reads the open regular file fd of the given size into the worker's
// buffer: what the file held when it was opened.
func (w *searchWorker) read(fd int, size int64) ([]byte, bool) {
	if size > maxSearchFileSize {
		return nil, false
	}
	if int64(cap(w.buf)) < size+1 {
		w.buf = make([]byte, size+1)
	}
	buf := w.buf[:cap(w.buf)]
	n := 0
	for {
		if n == len(buf) {
			if n >= maxSearchFileSize {
				return nil, false
			}
			buf = append(buf, 0)[:cap(buf)]
			w.buf = buf
		}
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		n += k
		if k == 0 || int64(n) == size && size > 0 {
			break
		}
	}
	return buf[:n], true
}

// clipAround shortens a long line to about n bytes around offset col,
// marking the cuts.
func clipAround(line []byte, col, n int) string {
	if len(line) <= n {
		return string(line)
	}
	start := max(0, min(col-n/4, len(line)-n))
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+n)
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end--
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.Write(line[start:end])
	if end < len(line) {
		b.WriteString("…")
	}
	return b.String()
}

func renderSearch(in *gen.SearchInput, out *gen.SearchResult) string {
	var b strings.Builder
	kind := "the string"
	if deref(in.Regex) {
		kind = "the regular expression"
	}
	switch {
	case len(out.Matches) == 0:
		fmt.Fprintf(&b, "no matches for %s %s\n", kind, quote(in.Pattern))
	case out.Truncated:
		fmt.Fprintf(&b, "the first %s (results cut at the limit; narrow the search with path or glob):\n", pluralES(len(out.Matches), "match"))
	default:
		fmt.Fprintf(&b, "%s:\n", pluralES(len(out.Matches), "match"))
	}
	for _, m := range out.Matches {
		fmt.Fprintf(&b, "%s:%d:%s\n", m.Path, m.Line, m.Text)
	}
	return b.String()
}

func pluralES(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ses", n, noun)
}
