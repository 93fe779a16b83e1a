package fswalk

import (
	"path"
	"strings"
)

// Glob filters files by a glob pattern. A pattern without a slash matches
// the file's name; one with a slash matches its workspace-relative path, and
// there a "**" segment matches any number of directories. Segments follow
// path.Match.
type Glob struct {
	segs     []string
	pathWide bool
}

// CompileGlob checks pattern; an empty pattern matches everything (nil).
func CompileGlob(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, nil
	}
	p := strings.TrimPrefix(pattern, "./")
	g := &Glob{pathWide: strings.Contains(p, "/")}
	if g.pathWide {
		for _, s := range strings.Split(strings.Trim(p, "/"), "/") {
			if s == "**" && len(g.segs) > 0 && g.segs[len(g.segs)-1] == "**" {
				continue // "**/**" is "**", and would cost exponential time
			}
			g.segs = append(g.segs, s)
		}
	} else {
		g.segs = []string{p}
	}
	for _, s := range g.segs {
		if s == "**" {
			continue
		}
		// path.Match reports a malformed pattern only when it gets that far;
		// matching against the pattern itself walks all of it.
		if _, err := path.Match(s, s); err != nil {
			return nil, err
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Match reports whether the file at the root-relative path rel matches.
func (g *Glob) Match(rel string) bool {
	if g == nil {
		return true
	}
	if !g.pathWide {
		ok, _ := path.Match(g.segs[0], path.Base(rel))
		return ok
	}
	return matchSegs(g.segs, strings.Split(rel, "/"))
}

func matchSegs(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(parts); i++ {
				if matchSegs(rest, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}
