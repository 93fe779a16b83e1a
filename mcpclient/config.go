package mcpclient

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/specloop/specloop/internal/ident"
)

// Separator joins a server's name and its tool's name in the name the
// model sees: NAME__tool.
const Separator = "__"

// maxNameLen is the longest server name; with the separator and a tool
// name the whole must fit the 64 characters providers allow a tool name.
const maxNameLen = 32

// Server is one external MCP server of the user's configuration: a command
// that speaks MCP over stdio, or the URL of a streamable HTTP endpoint.
type Server struct {
	// Name prefixes the server's tools: NAME__tool. Letters, digits, - and
	// _ (never two _ in a row), at most 32.
	Name string
	// Command is the program and its arguments of a stdio server.
	Command []string
	// URL is the endpoint of a streamable HTTP server (http or https).
	URL string
	// Env names the variables of specloop's environment that a stdio
	// server gets besides BaseEnv, when they are set: its environment is
	// built from these two alone, so no secret of specloop's reaches it
	// unless named here. Names only, never values: a Server holds no
	// secret. Not for a URL server.
	Env []string
}

// ParseServer parses NAME=COMMAND or NAME=URL: a value that starts with
// http:// or https:// is a URL, anything else a command line split like a
// shell would split it (see Split), without a shell.
func ParseServer(s string) (Server, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return Server{}, errors.New("want NAME=COMMAND or NAME=URL")
	}
	if err := checkName(name); err != nil {
		return Server{}, err
	}
	srv := Server{Name: name}
	if strings.HasPrefix(value, "http://") || strings.HasPrefix(value, "https://") {
		u, err := url.Parse(value)
		if err != nil || u.Host == "" {
			return Server{}, fmt.Errorf("server %q: the URL is not a valid http(s) URL", name)
		}
		srv.URL = value
		return srv, nil
	}
	argv, err := split(value)
	if err != nil {
		return Server{}, fmt.Errorf("server %q: %w", name, err)
	}
	if len(argv) == 0 {
		return Server{}, fmt.Errorf("server %q: the command is empty", name)
	}
	srv.Command = argv
	return srv, nil
}

// Validate checks that s names a valid server with exactly one of a
// command and a URL, and that Env, given only with a command, holds valid
// variable names.
func (s Server) Validate() error {
	if err := checkName(s.Name); err != nil {
		return err
	}
	if (len(s.Command) == 0) == (s.URL == "") {
		return fmt.Errorf("server %q: give exactly one of a command and a URL", s.Name)
	}
	if len(s.Env) > 0 && s.URL != "" {
		return fmt.Errorf("server %q: environment variables are for a stdio server (a command), not a URL", s.Name)
	}
	for _, name := range s.Env {
		if err := CheckEnvName(name); err != nil {
			return fmt.Errorf("server %q: %w", s.Name, err)
		}
	}
	return nil
}

func checkName(name string) error {
	if !ident.Of(name, maxNameLen, "-_") {
		return fmt.Errorf("the server name %.64q must be 1 to %d letters, digits, - and _", name, maxNameLen)
	}
	if strings.Contains(name, Separator) || strings.HasSuffix(name, "_") {
		return fmt.Errorf("the server name %q must not contain %q or end with _ (it separates the server from its tool)", name, Separator)
	}
	return nil
}

// split splits a command line into words like a POSIX shell, without
// running one and without expanding anything: words are separated by
// blanks; '…' quotes everything literally; "…" quotes everything but \\,
// \", \$ and \` (backslash escapes); outside quotes a backslash escapes the
// next character. $VAR, ~, globs, pipes and redirections are plain text.
func split(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\\':
			inWord = true
			if i+1 == len(s) {
				return nil, errors.New("the command ends with a lone backslash")
			}
			i++
			if s[i] != '\n' { // backslash-newline continues the line
				w.WriteByte(s[i])
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("the command has an unterminated ' quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				w.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New(`the command has an unterminated " quote`)
			}
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
