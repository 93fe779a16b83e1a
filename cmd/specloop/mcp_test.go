package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/trace"
)

// selfServerEnv makes the test binary run the command line it is given
// (os.Args[1:]) as specloop: the tests use it as an external stdio MCP
// server, `specloop mcp`. A stdio server gets only the variables named for
// it (--mcp-env), so a test whose client cannot name one (an ACP client's
// server) starts the binary through a symbolic link instead, which does
// the same (startedThroughLink).
const selfServerEnv = "SPECLOOP_CMD_TEST_SELF"

// startedThroughLink reports whether the test binary was started through
// a symbolic link to it, which go test never does.
func startedThroughLink() bool {
	fi, err := os.Lstat(os.Args[0])
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func TestMain(m *testing.M) {
	if os.Getenv(selfServerEnv) == "1" || startedThroughLink() {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// Runs keep their transcripts in the user's state directory: the
	// tests' go to one of their own.
	state, err := os.MkdirTemp("", "specloop-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv(cli.StateHomeEnv, state)
	// Nor does a configuration file of the machine's user apply.
	os.Setenv(cli.ConfigHomeEnv, filepath.Join(state, "config"))
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// mcpSession starts `specloop mcp ARGS` in-process on pipes and returns a
// client session; closing it ends the command, whose exit status done
// receives.
func mcpSession(t *testing.T, args ...string) (cs *mcp.ClientSession, done <-chan int, stderr *strings.Builder) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	codes := make(chan int, 1)
	stderr = &strings.Builder{}
	go func() {
		code := run(context.Background(), append([]string{"mcp"}, args...), inR, outW, stderr)
		outW.Close()
		codes <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	return cs, codes, stderr
}

// specloop mcp serves the tools on stdin and stdout.
func TestMCPCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, done, stderr := mcpSession(t, "--workspace", dir, "--no-commands")
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
	}
	if !names["read_file"] || !names["calculator"] || names["run_command"] {
		t.Fatalf("tools with --no-commands: %v", names)
	}
	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || got.IsError || !strings.Contains(got.Content[0].(*mcp.TextContent).Text, "hello") {
		t.Fatalf("read_file: %+v %v", got, err)
	}
	got, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "../escape.txt"}})
	if err != nil || !got.IsError {
		t.Fatalf("an escape: %+v %v", got, err)
	}
	cs.Close() // closes stdin: the command ends
	if code := <-done; code != exitOK {
		t.Fatalf("specloop mcp exited %d: %s", code, stderr.String())
	}
}

// run_command through MCP runs in the sandbox --sandbox names: a write
// outside the workspace fails under every confining backend available
// here, and succeeds unconfined (which shows the attempt is real).
func TestMCPRunCommandSandboxed(t *testing.T) {
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap, sandbox.None} {
		t.Run(string(b), func(t *testing.T) {
			if err := sandbox.Available(b); err != nil {
				t.Skipf("backend %s: %v", b, err)
			}
			ws, outside := t.TempDir(), t.TempDir()
			target := filepath.Join(outside, "escaped.txt")
			cs, done, stderr := mcpSession(t, "--workspace", ws, "--sandbox", string(b))
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "echo x > " + target}})
			if err != nil {
				t.Fatalf("run_command: %v", err)
			}
			cs.Close()
			if code := <-done; code != exitOK {
				t.Fatalf("specloop mcp exited %d: %s", code, stderr.String())
			}
			_, statErr := os.Stat(target)
			if escaped := statErr == nil; escaped != (b == sandbox.None) {
				t.Fatalf("backend %s: the write outside the workspace happened: %v (result %+v)", b, escaped, res.Content)
			}
		})
	}
}

// specloop run --mcp starts the server (here specloop mcp itself, over
// stdio, given the variable that makes the test binary specloop by
// --mcp-env), offers its tools as NAME__tool, and the trace records the
// call.
func TestRunWithMCPServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(selfServerEnv, "1")
	dir := t.TempDir()
	script := filepath.Join(dir, "s.script")
	lines := `{"type":"tool_call","tool_name":"self__calculator","arguments":{"left":12,"operation":"multiply","right":7}}` + "\n" +
		`{"type":"finish","answer":"84"}` + "\n"
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "trace.jsonl")
	ws := t.TempDir()
	server := "self='" + exe + "' mcp --no-commands --workspace '" + ws + "'"
	code, stdout, stderr := specloop(t, "run", "--script", script, "--no-commands", "--workspace", ws, "--trace", tracePath, "--json", "--mcp", server, "--mcp-env", "self="+selfServerEnv, "multiply")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	var obs *gen.TraceEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ev, err := trace.ParseEvent([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == gen.TraceEventTypeObservation {
			obs = &ev
		}
	}
	if obs == nil || obs.ToolName == nil || *obs.ToolName != "self__calculator" || obs.IsError == nil || *obs.IsError {
		out, _ := json.Marshal(obs)
		t.Fatalf("the observation event: %s", out)
	}
}

// The user's configuration file gives a server its variables as
// --mcp-env does (mcp_env), by name.
func TestRunMCPEnvFromConfig(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(selfServerEnv, "1")
	ws := t.TempDir()
	server := "self='" + exe + "' mcp --no-commands --workspace '" + ws + "'"
	configured(t, "mcp = ["+quote(server)+"]\nmcp_env = ["+quote("self="+selfServerEnv)+"]\n", "")
	script := filepath.Join(t.TempDir(), "s.script")
	lines := `{"type":"tool_call","tool_name":"self__calculator","arguments":{"left":12,"operation":"multiply","right":7}}` + "\n" +
		`{"type":"finish","answer":"84"}` + "\n"
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server starts as specloop only with the variable: without it
	// the test binary runs its tests, no MCP server, and the run fails.
	code, stdout, stderr := specloop(t, "run", "--script", script, "--no-commands", "--workspace", ws, "--json", "multiply")
	if code != exitOK || !strings.Contains(stdout, `"finished"`) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// An --mcp-env that names no --mcp server, a URL server or no valid
// variable stops run and serve before anything starts, naming it.
func TestMCPEnvErrors(t *testing.T) {
	t.Setenv(cli.TokenEnv, "")
	for _, tc := range []struct{ env, want string }{
		{"nope=GITHUB_TOKEN", `no --mcp server is named "nope"`},
		{"web=GITHUB_TOKEN", `the server "web" is a URL`},
		{"gh=GITHUB-TOKEN", `"GITHUB-TOKEN" is not a valid name`},
	} {
		mcp := []string{"--mcp", "gh=/nonexistent/server", "--mcp", "web=https://example.com/mcp", "--mcp-env", tc.env}
		for _, args := range [][]string{
			append([]string{"run", "--script", "testdata/calculator.script", "--no-commands"}, append(mcp, "p")...),
			append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", t.TempDir()}, mcp...),
		} {
			code, _, stderr := specloop(t, args...)
			if code != exitUsage || !strings.Contains(stderr, "--mcp-env") || !strings.Contains(stderr, tc.want) {
				t.Errorf("%s --mcp-env %s: exit %d, %s", args[0], tc.env, code, stderr)
			}
		}
	}
	// serve --config's mcp_env likewise.
	conf := filepath.Join(t.TempDir(), "serve.toml")
	if err := os.WriteFile(conf, []byte(`mcp_env = ["nope=GITHUB_TOKEN"]`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := specloop(t, "serve", "--config", conf, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, `no --mcp server is named "nope"`) {
		t.Errorf("serve --config with an unknown mcp_env server: exit %d, %s", code, stderr)
	}
}

func TestRunMCPFlagErrors(t *testing.T) {
	for _, value := range []string{"noname", "a__b=cmd", "x='unterminated"} {
		code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--no-commands", "--mcp", value, "p")
		if code != exitUsage || !strings.Contains(stderr, "--mcp") {
			t.Errorf("--mcp %s: exit %d, %s", value, code, stderr)
		}
	}
	code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--no-commands", "--mcp", "gone=/nonexistent/server", "p")
	if code != exitUsage || !strings.Contains(stderr, `--mcp: mcp server "gone"`) {
		t.Errorf("a server that cannot start: exit %d, %s", code, stderr)
	}
}

// With --remote, --mcp names a server the remote server configured: the
// request carries the name (this server has none, so it is refused,
// named), never a command.
func TestRemoteRunMCPNames(t *testing.T) {
	url := remoteURL(t)
	code, _, stderr := specloop(t, "run", "--remote", url, "--script", "testdata/calculator.script", "--mcp", "weather", "p")
	if code == exitOK || !strings.Contains(stderr, "weather") || !strings.Contains(stderr, "mcp_servers") {
		t.Fatalf("an unknown remote MCP server: exit %d, %s", code, stderr)
	}
	code, _, stderr = specloop(t, "run", "--remote", url, "--script", "testdata/calculator.script", "--mcp", "weather=weather-mcp", "p")
	if code != exitUsage || !strings.Contains(stderr, "--mcp weather") {
		t.Fatalf("a command with --remote: exit %d, %s", code, stderr)
	}
}

// A model flag error is reported before any MCP server is started.
func TestRunModelErrorStartsNoMCPServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	marker := filepath.Join(t.TempDir(), "started")
	code, _, stderr := specloop(t, "run", "--model", "openai:gpt-4.1", "--no-commands", "--mcp", "m=touch "+marker, "p")
	if code != exitUsage {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the MCP server was started before the model flags were checked")
	}
}
