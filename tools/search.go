package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/tools/internal/fswalk"
	"github.com/specloop/specloop/tools/internal/linematch"
)

const (
	// searchLineLen is how much of a matching line a result shows.
	searchLineLen = 300
	// searchQueue bounds the files listed ahead of the workers; each holds
	// its directory open.
	searchQueue = 128
	// maxNoteFiles bounds the file names a note lists.
	maxNoteFiles = 5
)

var searchHandler = Func(NeedsWorkspace, search, renderSearch)

func search(ctx context.Context, env *Env, in *gen.SearchInput) (*gen.SearchResult, error) {
	m, err := linematch.Compile(in.Pattern, orDefault(in.Regex, defaultSearchRegex), orDefault(in.IgnoreCase, defaultIgnoreCase))
	if err != nil {
		return nil, Errorf(gen.ErrorCodeInvalidRegex, "%v", err)
	}
	rel, err := clean(orDefault(in.Path, ""))
	if err != nil {
		return nil, err
	}
	g, err := compileGlob(orDefault(in.Glob, ""))
	if err != nil {
		return nil, err
	}
	s := &searcher{ws: env.Workspace, m: m, glob: g, limit: orDefault(in.Limit, defaultSearchLimit)}
	matches, err := s.run(ctx, rel)
	if err != nil {
		return nil, err
	}
	out := &gen.SearchResult{
		Matches:   append([]gen.SearchMatch{}, matches[:min(len(matches), s.limit)]...),
		Truncated: len(matches) > s.limit || s.walk != nil && s.walk.Capped,
	}
	if ns := s.notes(); len(ns) > 0 {
		out.Notes = &ns
	}
	return out, nil
}

// searcher runs one search over the workspace: a walker goroutine lists the
// files in path order, workers read and match them in parallel, and the
// caller collects the results back in path order, stopping everything once
// the limit is passed.
type searcher struct {
	ws    *Workspace
	m     *linematch.Matcher
	glob  *fswalk.Glob
	limit int

	// What the search left out, for the notes; written by run's
	// collector (or the single-file path) only.
	large   fileNote // files over maxScanFileSize
	partial fileNote // files with lines matched in part; n counts the lines
	walk    *fswalk.Walker
}

// fileNote is some files a note names (up to maxNoteFiles) and a count.
type fileNote struct {
	names []string
	n     int
}

func (f *fileNote) add(rel string, n int) {
	if len(f.names) < maxNoteFiles {
		f.names = append(f.names, rel)
	}
	f.n += n
}

// list renders the names, with "…" when there were more files.
func (f *fileNote) list(files int) string {
	qs := make([]string, len(f.names))
	for i, p := range f.names {
		qs[i] = quote(p)
	}
	if files > len(f.names) {
		qs = append(qs, "…")
	}
	return strings.Join(qs, ", ")
}

// searchJob is a file to search and where its result goes.
type searchJob struct {
	f    fswalk.File
	done chan fileResult
}

// fileResult is what searching one file found.
type fileResult struct {
	matches []gen.SearchMatch
	large   bool // over maxScanFileSize: not searched
	cut     int  // lines matched on their first part only
}

// add records a file's result in the notes and returns its matches.
func (s *searcher) add(rel string, r fileResult) []gen.SearchMatch {
	if r.large {
		s.large.add(rel, 1)
	}
	if r.cut > 0 {
		s.partial.add(rel, r.cut)
	}
	return r.matches
}

// notes says what the search left out.
func (s *searcher) notes() []string {
	var ns []string
	if s.large.n > 0 {
		ns = append(ns, fmt.Sprintf("%s over %s not searched: %s", plural(s.large.n, "file"), mib(maxScanFileSize), s.large.list(s.large.n)))
	}
	if s.partial.n > 0 {
		ns = append(ns, fmt.Sprintf("%s longer than %s searched in %s first %s only, in %s", plural(s.partial.n, "line"), sizeText(s.m.LineCap()), pick(s.partial.n, "its", "their"), sizeText(s.m.LineCap()), s.partial.list(len(s.partial.names))))
	}
	if s.walk != nil {
		ns = append(ns, walkNotes(s.walk)...)
	}
	return ns
}

// run searches the file or directory rel, until it has more matches than
// the limit. It returns once every worker has stopped: a cancelled search
// burns no more CPU.
func (s *searcher) run(parent context.Context, rel string) ([]gen.SearchMatch, error) {
	fi, err := s.ws.root.Stat(rel)
	if err != nil {
		return nil, fsError(err, rel, gen.ErrorCodeNotFound)
	}
	if !fi.IsDir() {
		// A file named explicitly is searched even when ignored; one that
		// is not a regular file has nothing to match.
		f, fi, err := s.ws.openRegular(rel)
		var te *Error
		if errors.As(err, &te) && te.Code == gen.ErrorCodeNotARegularFile {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if fi.Size() > maxScanFileSize {
			return nil, tooLarge(rel, fi.Size(), maxScanFileSize, "search", "search it with run_command (grep) instead")
		}
		r := newSearchWorker(s).scan(parent, f.Read, fi.Size(), rel)
		return s.add(rel, r), parent.Err()
	}

	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// The walker sends each file to the workers and, in path order, to the
	// collector, which waits for each file's result in turn.
	jobs := make(chan searchJob, searchQueue)
	order := make(chan searchJob, searchQueue)
	var walkErr error
	s.walk = newWalker(s.ws, s.glob)
	go func() {
		defer close(order)
		defer close(jobs)
		walkErr = s.walk.Walk(ctx, rel, func(f fswalk.File) bool {
			j := searchJob{f: f, done: make(chan fileResult, 1)}
			select {
			case order <- j:
				jobs <- j // the workers take every job, also once cancelled
				return true
			case <-ctx.Done():
				f.Dir.Release()
				return false
			}
		})
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			w := newSearchWorker(s)
			for j := range jobs {
				var r fileResult
				if ctx.Err() == nil {
					r = w.file(ctx, j.f.Dir, j.f.Name, j.f.Rel)
				}
				j.f.Dir.Release()
				j.done <- r
			}
		})
	}
	var out []gen.SearchMatch
	for j := range order {
		r := <-j.done
		if len(out) > s.limit {
			continue // draining
		}
		if out = append(out, s.add(j.f.Rel, r)...); len(out) > s.limit {
			cancel()
		}
	}
	if err := parent.Err(); err != nil {
		return nil, err
	}
	if walkErr != nil && len(out) <= s.limit {
		return nil, fsError(walkErr, rel, gen.ErrorCodeNotFound)
	}
	return out, nil
}

// searchWorker reads and matches files with buffers of its own: one chunk
// of searchMaxLine bytes.
type searchWorker struct {
	s   *searcher
	buf []byte
	st  linematch.State
}

func newSearchWorker(s *searcher) *searchWorker {
	return &searchWorker{s: s, buf: make([]byte, searchMaxLine)}
}

// file searches the file name of dir (rel in the workspace). Files that are
// not regular, unreadable or binary have no matches; those over
// maxScanFileSize are not read.
func (w *searchWorker) file(ctx context.Context, dir *fswalk.Dir, name, rel string) fileResult {
	f, size, err := dir.OpenFile(name)
	if err != nil {
		return fileResult{}
	}
	defer f.Close()
	if size > maxScanFileSize {
		return fileResult{large: true}
	}
	return w.scan(ctx, f.Read, size, rel)
}

// scan matches the file rel, of the given size when opened, read with read
// (which returns 0 or an error at the end) in chunks of at most
// searchMaxLine bytes: what the file held when it was opened, up to
// maxScanFileSize. A line longer than a chunk is matched on its first
// chunk. Binary files have no matches. It stops when ctx is done.
func (w *searchWorker) scan(ctx context.Context, read func([]byte) (int, error), size int64, rel string) fileResult {
	var r fileResult
	w.st.Stop = func() bool { return ctx.Err() != nil }
	w.st.Cut = 0
	defer func() { w.st.Stop = nil }()
	buf := w.buf
	var (
		n        = 0 // bytes in buf
		total    = int64(0)
		eof      = false
		first    = true
		lineBase = 0 // lines before buf
		limit    = w.s.limit + 1
	)
	readSome := func(p []byte) int {
		k, err := read(p)
		total += int64(k)
		if k == 0 || err != nil || size > 0 && total >= size || total >= maxScanFileSize {
			eof = true
		}
		return k
	}
	fill := func() {
		for n < len(buf) && !eof {
			n += readSome(buf[n:])
		}
	}
	match := func(data []byte) {
		w.s.m.Match(&w.st, data, limit-len(r.matches), func(lm linematch.Line) {
			r.matches = append(r.matches, gen.SearchMatch{Path: rel, Line: lineBase + lm.N, Text: clipAround(lm.Text, lm.Col, searchLineLen)})
		})
	}
	for {
		fill()
		if first {
			if isBinary(buf[:n]) {
				return fileResult{}
			}
			first = false
		}
		if ctx.Err() != nil || len(r.matches) >= limit {
			break
		}
		if eof {
			match(buf[:n])
			break
		}
		i := bytes.LastIndexByte(buf[:n], '\n')
		if i < 0 {
			// A line longer than the buffer: match its beginning, skip
			// the rest.
			cut := w.st.Cut
			match(buf[:n])
			if w.st.Cut == cut {
				w.st.Cut++
			}
			for n = 0; !eof && ctx.Err() == nil; {
				k := readSome(buf)
				if j := bytes.IndexByte(buf[:k], '\n'); j >= 0 {
					n = copy(buf, buf[j+1:k])
					break
				}
			}
			lineBase++
			continue
		}
		match(buf[:i+1])
		lineBase += bytes.Count(buf[:i+1], []byte{'\n'})
		n = copy(buf, buf[i+1:n])
	}
	r.cut = w.st.Cut
	return r
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
	mid := textclip.Head(line[start:], n)
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.Write(mid)
	if start+len(mid) < len(line) {
		b.WriteString("…")
	}
	return b.String()
}

func renderSearch(in *gen.SearchInput, out *gen.SearchResult) string {
	var b strings.Builder
	matches := fmt.Sprintf("%d %s", len(out.Matches), pick(len(out.Matches), "match", "matches"))
	kind := "the string"
	if orDefault(in.Regex, defaultSearchRegex) {
		kind = "the regular expression"
	}
	switch {
	case len(out.Matches) == 0:
		fmt.Fprintf(&b, "no matches for %s %s\n", kind, quote(in.Pattern))
	case out.Truncated:
		fmt.Fprintf(&b, "the first %s (results cut %s; narrow the search with path or glob):\n", matches, cutWhere(len(out.Matches), orDefault(in.Limit, defaultSearchLimit)))
	default:
		fmt.Fprintf(&b, "%s:\n", matches)
	}
	for _, m := range out.Matches {
		fmt.Fprintf(&b, "%s:%d:%s\n", m.Path, m.Line, m.Text)
	}
	writeNotes(&b, out.Notes)
	return b.String()
}
