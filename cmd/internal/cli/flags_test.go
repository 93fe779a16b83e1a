package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/specloop/specloop/sandbox"
)

// TestSandboxFlags: the sandbox flags make the policy they name.
func TestSandboxFlags(t *testing.T) {
	var f SandboxFlags
	fs := (&Env{Prog: "specloop", Stdout: os.Stdout, Stderr: os.Stderr}).FlagSet("x", "", "")
	f.Register(fs)
	if err := fs.Parse([]string{"--pass-env", "A", "--pass-env", "B", "--allow-network", "--allow-git-writes", "--sandbox", "bwrap"}); err != nil {
		t.Fatal(err)
	}
	p, err := f.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Backend != sandbox.Bwrap || !p.AllowNetwork || !p.AllowGitWrites || strings.Join(p.PassEnv, ",") != "A,B" {
		t.Fatalf("policy %+v", p)
	}
}

// mcpFlags parses args as --mcp, --mcp-env and --mcp-timeout.
func mcpFlags(t *testing.T, args ...string) *MCPFlags {
	t.Helper()
	var f MCPFlags
	fs := (&Env{Prog: "specloop", Stdout: os.Stdout, Stderr: os.Stderr}).FlagSet("x", "", "")
	f.Register(fs, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f
}

// --mcp-env NAME=VAR gives the stdio server NAME the variable VAR, by
// name: the value stays in specloop's environment until the server starts.
func TestMCPEnvFlag(t *testing.T) {
	f := mcpFlags(t, "--mcp", "gh=github-mcp-server stdio", "--mcp", "fs=fs-server", "--mcp", "web=https://example.com/mcp",
		"--mcp-env", "gh=GITHUB_TOKEN", "--mcp-env", "gh=GH_HOST", "--mcp-env", "gh=GITHUB_TOKEN")
	servers, err := f.Servers()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 3 || strings.Join(servers[0].Env, ",") != "GITHUB_TOKEN,GH_HOST" || servers[1].Env != nil || servers[2].Env != nil {
		t.Fatalf("servers %+v", servers)
	}
	for _, tc := range []struct {
		env  string
		want []string // in the error
	}{
		{"nope=GITHUB_TOKEN", []string{"--mcp-env", `"nope"`, "no --mcp server"}},
		{"web=GITHUB_TOKEN", []string{"--mcp-env", `"web"`, "URL"}},
		{"gh=GITHUB-TOKEN", []string{"--mcp-env", `"GITHUB-TOKEN"`, "not a valid name"}},
		{"gh=", []string{"--mcp-env", `""`, "not a valid name"}},
		{"gh=A=B", []string{"--mcp-env", `"A=B"`, "not a valid name"}},
		{"GITHUB_TOKEN", []string{"--mcp-env", `"GITHUB_TOKEN"`, "NAME=VAR"}},
	} {
		f := mcpFlags(t, "--mcp", "gh=github-mcp-server stdio", "--mcp", "web=https://example.com/mcp", "--mcp-env", tc.env)
		_, err := f.Servers()
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("--mcp-env %s: %v, want an error with %s", tc.env, err, want)
			}
		}
	}
	// With --remote the remote server's configuration gives its servers
	// their variables.
	if _, err := mcpFlags(t, "--mcp", "gh", "--mcp-env", "gh=GITHUB_TOKEN").Names(); err == nil || !strings.Contains(err.Error(), "--mcp-env") {
		t.Errorf("--mcp-env with --remote: %v", err)
	}
}
