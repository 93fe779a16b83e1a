package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
)

// SandboxFlags are the flags that choose how commands (run_command and the
// completion check) are confined, shared by run, demo, mcp, serve and
// worker.
type SandboxFlags struct {
	backend        string
	allowNetwork   bool
	allowGitWrites bool
	passEnv        stringList
}

func (f *SandboxFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "sandbox", string(sandbox.Auto), "how commands are confined: auto (bwrap if it works here, else landlock), landlock, bwrap or none (unconfined)")
	fs.BoolVar(&f.allowNetwork, "allow-network", false, "let commands use the network")
	fs.BoolVar(&f.allowGitWrites, "allow-git-writes", false, "let commands write under the workspace's .git (read-only by default)")
	fs.Var(&f.passEnv, "pass-env", "pass this environment variable to commands besides PATH, LANG, LC_*, TERM and the Go variables (repeatable)")
}

// Policy checks the flags.
func (f *SandboxFlags) Policy() (sandbox.Policy, error) {
	b, err := sandbox.ParseBackend(f.backend)
	if err != nil {
		return sandbox.Policy{}, fmt.Errorf("--sandbox: %w", err)
	}
	return sandbox.Policy{Backend: b, AllowNetwork: f.allowNetwork, AllowGitWrites: f.allowGitWrites, PassEnv: f.passEnv}, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// MCPFlags are --mcp and --mcp-env (repeatable) and --mcp-timeout, of
// run, serve and worker. Locally and on a server, --mcp is NAME=COMMAND or
// NAME=URL; with run --remote it is the NAME of a server the remote server
// configured. --mcp-env NAME=VAR passes the variable VAR of specloop's
// environment to the stdio server NAME (its value never in argv or a
// configuration file).
type MCPFlags struct {
	values  []string
	env     []string
	timeout time.Duration
}

func (f *MCPFlags) Register(fs *flag.FlagSet, usage string) {
	fs.Func("mcp", usage, func(v string) error {
		f.values = append(f.values, v)
		return nil
	})
	envUsage := "NAME=VAR: give the stdio server NAME (of --mcp) the variable VAR of specloop's environment, when it is set; " +
		"a stdio server gets only " + strings.Join(mcpclient.BaseEnv, ", ") + ", LC_* and the variables named so, never specloop's others (API keys, tokens); repeatable"
	fs.Func("mcp-env", envUsage, func(v string) error {
		f.env = append(f.env, v)
		return nil
	})
	fs.DurationVar(&f.timeout, "mcp-timeout", mcpclient.DefaultCallTimeout, "the longest one call of an MCP server's tool may take")
}

// Servers parses the NAME=COMMAND and NAME=URL values and gives each
// stdio server the variables --mcp-env names for it; a name given twice,
// an --mcp-env for no server or a URL server, and a variable name that is
// not one are errors naming them.
func (f *MCPFlags) Servers() ([]mcpclient.Server, error) {
	if f.timeout <= 0 {
		return nil, errors.New("--mcp-timeout must be positive")
	}
	var out []mcpclient.Server
	for _, v := range f.values {
		s, err := mcpclient.ParseServer(v)
		if err != nil {
			return nil, fmt.Errorf("--mcp: %w", err)
		}
		if slices.ContainsFunc(out, func(o mcpclient.Server) bool { return o.Name == s.Name }) {
			return nil, fmt.Errorf("--mcp: the server name %q is given twice", s.Name)
		}
		out = append(out, s)
	}
	for _, v := range f.env {
		name, variable, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--mcp-env %.64q: want NAME=VAR, the server's name and the name of a variable of specloop's environment", v)
		}
		i := slices.IndexFunc(out, func(s mcpclient.Server) bool { return s.Name == name })
		switch {
		case i < 0:
			return nil, fmt.Errorf("--mcp-env %.64q: no --mcp server is named %.64q", v, name)
		case out[i].URL != "":
			return nil, fmt.Errorf("--mcp-env %.64q: the server %q is a URL; only a stdio server (a command) takes environment variables", v, name)
		}
		if err := mcpclient.CheckEnvName(variable); err != nil {
			return nil, fmt.Errorf("--mcp-env %.64q: %w", v, err)
		}
		if !slices.Contains(out[i].Env, variable) {
			out[i].Env = append(out[i].Env, variable)
		}
	}
	return out, nil
}

// Names returns the values as names of servers configured on a remote
// server.
func (f *MCPFlags) Names() ([]string, error) {
	for _, v := range f.values {
		if name, _, ok := strings.Cut(v, "="); ok {
			return nil, fmt.Errorf("--mcp %s: with --remote, give the NAME of a server the remote server was started with (serve --mcp NAME=...), not a command or URL", name)
		}
	}
	if len(f.env) > 0 {
		return nil, errors.New("--mcp-env: with --remote, the remote server's own --mcp-env gives its servers their variables")
	}
	return f.values, nil
}

// Config is how the servers' calls are made; their stderr goes to stderr.
func (f *MCPFlags) Config(stderr io.Writer) mcpclient.Config {
	return mcpclient.Config{CallTimeout: f.timeout, Stderr: stderr}
}

// ToolsSpecFlags is --tools-spec, shared by run and serve: OpenAPI
// documents of extra tools whose operations declare their handlers (a
// sandboxed command or an HTTP endpoint; see tools.Spec.RegisterDeclared).
type ToolsSpecFlags []string

func (f *ToolsSpecFlags) Register(fs *flag.FlagSet) {
	fs.Var((*stringList)(f), "tools-spec", "an OpenAPI document of extra tools (POST /v1/tools/{name}), each run by the command of its x-specloop-argv (under the sandbox; needs commands) or posted to its operation's servers URL (repeatable)")
}

// Load reads, checks and binds every document; an error names the file.
func (f *ToolsSpecFlags) Load() ([]*tools.Spec, error) {
	var specs []*tools.Spec
	for _, path := range *f {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--tools-spec: %w", err)
		}
		spec, err := tools.LoadSpec(data)
		if err == nil {
			err = spec.RegisterDeclared(tools.DeclaredConfig{})
		}
		if err != nil {
			return nil, fmt.Errorf("--tools-spec %s: %w", path, err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// SystemFileUsage describes --system-file, of run and serve.
const SystemFileUsage = "a file holding the system prompt for openai and anthropic models (default: the built-in prompt for code tasks); {{finish}} in it names the finish tool"

// maxSystemFile is the largest --system-file: a system prompt goes with
// every request, so anything near this is already far too large.
const maxSystemFile = 256 << 10

// ReadSystemFile returns the system prompt in the file at path, or "" (the
// default prompt) when path is empty.
func ReadSystemFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	switch {
	case err != nil:
		return "", err
	case len(data) > maxSystemFile:
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxSystemFile)
	case strings.TrimSpace(string(data)) == "":
		return "", fmt.Errorf("%s is empty", path)
	}
	return string(data), nil
}
