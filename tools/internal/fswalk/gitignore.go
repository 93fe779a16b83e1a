package fswalk

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// ignoreRule is one pattern of a .gitignore, matched by go-git's gitignore
// package against paths relative to the .gitignore's directory.
//
// go-git's Pattern.Match also reports a match when the pattern matches a
// directory above the path (it answers "is this path inside something the
// pattern names"), which gives a re-including "!dir" or an excluding "a/*"
// the last word over files inside; git matches each path by itself. The
// walk already skips ignored directories, so a rule here is asked about
// the path itself only: a pattern without a slash about its name, an
// anchored one about the whole relative path but not when it only names a
// directory above it.
type ignoreRule struct {
	pat gitignore.Pattern
	// anchored: the pattern has a slash before its end, so it is matched
	// against the path from the .gitignore's directory.
	anchored bool
	// inside: the pattern ends in "/**" and matches what is inside the
	// directories it names, not the directories themselves.
	inside bool
}

// parseIgnoreLine parses one line of a .gitignore as git does: blank lines
// and lines starting with "#" are not patterns, trailing spaces are dropped
// unless escaped with a backslash, a leading "!" negates (`\!` and `\#`
// are literal), a trailing "/" matches directories only, a leading "**/"
// before a single name matches at any depth, "[!...]" is a negated class,
// and "**" other than a whole segment is "*".
func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	neg := ""
	if line[0] == '!' {
		neg, line = "!", line[1:]
	}
	dirOnly := ""
	if strings.HasSuffix(line, "/") {
		dirOnly, line = "/", strings.TrimRight(line, "/")
	}
	if rest, ok := strings.CutPrefix(line, "**/"); ok && !strings.Contains(rest, "/") {
		line = rest
	}
	if line == "" {
		return ignoreRule{}, false
	}
	segs := strings.Split(line, "/")
	for i, s := range segs {
		if s != "**" {
			segs[i] = normalizeSegment(s)
		}
	}
	line = strings.Join(segs, "/")
	r := ignoreRule{
		pat:      gitignore.ParsePattern(neg+line+dirOnly, nil),
		anchored: strings.Contains(line, "/"),
		inside:   len(segs) > 1 && segs[len(segs)-1] == "**",
	}
	return r, true
}

// normalizeSegment turns an unescaped "[!" into "[^" (path.Match's
// negation) and runs of unescaped "*" into one.
func normalizeSegment(s string) string {
	if !strings.Contains(s, "[!") && !strings.Contains(s, "**") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c == '[' && i+1 < len(s) && s[i+1] == '!':
			b.WriteString("[^")
			i++
			continue
		case c == '*' && i > 0 && s[i-1] == '*' && (i < 2 || s[i-2] != '\\'):
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// match is the rule's verdict on rel, a path relative to the .gitignore's
// directory, itself (see ignoreRule).
func (r ignoreRule) match(rel []string, dir bool) gitignore.MatchResult {
	if !r.anchored {
		return r.pat.Match(rel[len(rel)-1:], dir)
	}
	if r.inside {
		// "a/**" matches what is inside a: the path's parent is a, or in it.
		if len(rel) < 2 {
			return gitignore.NoMatch
		}
		return r.pat.Match(rel[:len(rel)-1], true)
	}
	m := r.pat.Match(rel, dir)
	if m != gitignore.NoMatch && len(rel) > 1 && r.pat.Match(rel[:len(rel)-1], true) != gitignore.NoMatch {
		return gitignore.NoMatch // it names a directory above rel
	}
	return m
}
