// Package readmetest reads the code blocks of the README and of the pages
// of docs/ for the tests that run their examples (cmd/specloop's and
// cmd/specloop-temporal's).
package readmetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Docs are the documents whose examples are tested: README.md and the
// pages of docs/ under the repository root root.
func Docs(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in %s (%v)", filepath.Join(root, "docs"), err)
	}
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

// At names a line of a document as a reader finds it: its path from the
// repository root, and the line.
func At(path string, line int) string {
	for strings.HasPrefix(path, "../") {
		path = path[len("../"):]
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(path), line)
}

// Fence is one fenced code block of a document.
type Fence struct {
	File string // the document's path, as given to Fences
	Lang string
	Line int // of the opening fence, 1-based
	Body string
}

// At names the fence's line.
func (f Fence) At() string { return At(f.File, f.Line) }

// Fences returns the fenced code blocks of the document at path.
func Fences(t *testing.T, path string) []Fence {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Fence
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		f := Fence{File: path, Lang: strings.TrimSpace(strings.TrimPrefix(lines[i], "```")), Line: i + 1}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		f.Body = strings.Join(body, "\n") + "\n"
		out = append(out, f)
	}
	return out
}

// ShellWords splits a command line like sh does for the simple commands of
// the README: quotes, backslashes, comments. Variables and substitutions
// are kept as written. complete is false while a quote is open.
func ShellWords(s string) (words []string, complete bool) {
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, quote == 0
}

// Command is one command of a document's shell block.
type Command struct {
	File    string
	Line    int
	Words   []string
	Heredoc string // the body of a `cat > FILE <<'END'` command
	Output  string // in a session, the lines shown after the command
}

// At names the command's line.
func (c Command) At() string { return At(c.File, c.Line) }

// ShellCommands returns the commands of a shell block: in a session (lines
// starting with "$ "), only those lines and their continuations; otherwise
// every line that is not a comment.
func ShellCommands(f Fence) []Command {
	lines := strings.Split(strings.TrimRight(f.Body, "\n"), "\n")
	session := slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "$ ") })
	var out []Command
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if session {
			if !strings.HasPrefix(l, "$ ") {
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		start := i
		text := l
		for {
			words, complete := ShellWords(text)
			if (complete && !strings.HasSuffix(strings.TrimRight(text, " "), "\\")) || i+1 >= len(lines) {
				c := Command{File: f.File, Line: f.Line + 1 + start, Words: words}
				if m := regexp.MustCompile(`<<'?(\w+)'?$`).FindStringSubmatch(strings.TrimSpace(text)); m != nil {
					var body []string
					for i++; i < len(lines) && lines[i] != m[1]; i++ {
						body = append(body, lines[i])
					}
					c.Heredoc = strings.Join(body, "\n") + "\n"
					c.Words = c.Words[:len(c.Words)-1]
				}
				if session {
					var shown []string
					for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
						i++
						shown = append(shown, lines[i])
					}
					c.Output = strings.TrimSpace(strings.Join(shown, "\n"))
				}
				out = append(out, c)
				break
			}
			i++
			text += "\n" + lines[i]
		}
	}
	return out
}

// ShellBlocks returns the commands of every sh block of the README at path.
func ShellBlocks(t *testing.T, path string) []Command {
	t.Helper()
	var cmds []Command
	for _, f := range Fences(t, path) {
		if f.Lang == "sh" {
			cmds = append(cmds, ShellCommands(f)...)
		}
	}
	return cmds
}
