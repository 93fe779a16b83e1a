package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// base is a runtime of the built-in tools that need no workspace.
func base(t *testing.T) *tools.Runtime {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func open(t *testing.T, srv mcpclient.Server, cfg mcpclient.Config) *mcpclient.Runtime {
	t.Helper()
	rt, err := mcpclient.Open(context.Background(), base(t), []mcpclient.Server{srv}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func call(t *testing.T, rt agent.ToolRuntime, tool string, args map[string]any) gen.Observation {
	t.Helper()
	obs, err := rt.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return obs
}

func wantCode(t *testing.T, obs gen.Observation, code gen.ErrorCode) {
	t.Helper()
	if !obs.IsError || obs.ErrorCode == nil || *obs.ErrorCode != code {
		t.Fatalf("observation %+v (content %q), want error %s", obs, obs.Content, code)
	}
}

// The transports the tests run on: the test binary re-executed as a stdio
// server, and an in-process streamable HTTP server.
func transports(t *testing.T) map[string]func(t *testing.T) mcpclient.Server {
	return map[string]func(t *testing.T) mcpclient.Server{
		"stdio": func(t *testing.T) mcpclient.Server { return mcpclient.Server{Name: "ext", Command: stdioCommand(t)} },
		"http": func(t *testing.T) mcpclient.Server {
			url, _ := httpServer(t)
			return mcpclient.Server{Name: "ext", URL: url}
		},
	}
}

func TestToolsOfferedNextToTheBuiltins(t *testing.T) {
	t.Parallel()
	for name, server := range transports(t) {
		t.Run(name, func(t *testing.T) {
			b := base(t)
			rt := open(t, server(t), mcpclient.Config{})
			specs := rt.Specs()
			for i, s := range b.Specs() {
				if specs[i].Name != s.Name {
					t.Fatalf("tool %d is %s, want the built-in %s", i, specs[i].Name, s.Name)
				}
			}
			var echo *gen.ToolSpec
			for i := range specs {
				if specs[i].Name == "ext__echo" {
					echo = &specs[i]
				}
			}
			if echo == nil {
				t.Fatalf("ext__echo is not offered: %v", specs)
			}
			props, _ := echo.InputSchema["properties"].(map[string]any)
			if _, ok := props["times"]; !ok || echo.InputSchema["additionalProperties"] != false {
				t.Fatalf("ext__echo's input schema is not the server's: %v", echo.InputSchema)
			}
			if echo.Description != "Echoes text." || echo.ResultSchema == nil {
				t.Fatalf("ext__echo: description %q, result schema %v", echo.Description, echo.ResultSchema)
			}
			obs := call(t, rt, "ext__echo", map[string]any{"text": "ab", "times": float64(2)})
			if obs.IsError || obs.Data == nil || (*obs.Data)["echo"] != "abab" {
				t.Fatalf("ext__echo: %+v %q", obs, obs.Content)
			}
			// Built-in tools still work through the same runtime.
			obs = call(t, rt, "calculator", map[string]any{"operation": "add", "left": float64(1), "right": float64(2)})
			if obs.IsError {
				t.Fatalf("calculator: %q", obs.Content)
			}
			wantCode(t, call(t, rt, "ext__fail", nil), gen.ErrorCodeMcpToolError)
			if obs := call(t, rt, "ext__fail", nil); !strings.Contains(obs.Content, "the weather service is down") {
				t.Fatalf("the tool's error message is lost: %q", obs.Content)
			}
			obs = call(t, rt, "ext__nope", nil)
			wantCode(t, obs, gen.ErrorCodeUnknownTool)
			if !strings.Contains(obs.Content, "ext__echo") || !strings.Contains(obs.Content, "calculator") {
				t.Fatalf("the unknown tool's message does not list every tool: %q", obs.Content)
			}
		})
	}
}

// Arguments that do not match the tool's input schema are refused before
// the call: the server never sees them.
func TestInvalidArgumentsNeverReachTheServer(t *testing.T) {
	t.Parallel()
	url, calls := httpServer(t)
	rt := open(t, mcpclient.Server{Name: "ext", URL: url}, mcpclient.Config{})
	for _, args := range []map[string]any{
		nil,                             // text is required
		{"text": 5},                     // not a string
		{"text": "a", "times": 4.0},     // over the maximum
		{"text": "a", "times": 1.5},     // not an integer
		{"text": "a", "secret": "hush"}, // undeclared
		{"text": strings.Repeat("x", 101)},
	} {
		obs := call(t, rt, "ext__echo", args)
		wantCode(t, obs, gen.ErrorCodeInvalidArguments)
		if strings.Contains(obs.Content, "hush") || strings.Contains(obs.Content, "xxxx") {
			t.Errorf("the message quotes a value: %q", obs.Content)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d invalid calls reached the server", n)
	}
	call(t, rt, "ext__echo", map[string]any{"text": "a"})
	if n := calls.Load(); n != 1 {
		t.Fatalf("a valid call reached the server %d times", n)
	}
}

// A server that exits during a call gives an error Observation naming it,
// at once, and so does every later call of its tools.
func TestServerExitsMidCall(t *testing.T) {
	t.Parallel()
	rt := open(t, mcpclient.Server{Name: "ext", Command: stdioCommand(t)}, mcpclient.Config{CallTimeout: time.Minute})
	obs := call(t, rt, "ext__die", nil)
	wantCode(t, obs, gen.ErrorCodeMcpUnavailable)
	if !strings.Contains(obs.Content, "ext") {
		t.Fatalf("the message does not name the server: %q", obs.Content)
	}
	obs = call(t, rt, "ext__echo", map[string]any{"text": "a"})
	wantCode(t, obs, gen.ErrorCodeMcpUnavailable)
	if !strings.Contains(obs.Content, "stopped") {
		t.Fatalf("a later call does not say the server stopped: %q", obs.Content)
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	url, _ := httpServer(t)
	rt := open(t, mcpclient.Server{Name: "ext", URL: url}, mcpclient.Config{CallTimeout: 200 * time.Millisecond})
	wantCode(t, call(t, rt, "ext__hang", nil), gen.ErrorCodeMcpUnavailable)
	// The server still answers other calls.
	if obs := call(t, rt, "ext__echo", map[string]any{"text": "a"}); obs.IsError {
		t.Fatalf("after a timeout: %q", obs.Content)
	}
}

func TestCancelledCall(t *testing.T) {
	t.Parallel()
	url, _, release := httpServerStop(t)
	rt := open(t, mcpclient.Server{Name: "ext", URL: url}, mcpclient.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	obs, err := rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "ext__hang"})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, obs, gen.ErrorCodeCancelled)
	// The cancellation reaches the server only as a best-effort
	// notification: end its call, so that closing does not wait for it.
	release()
}

// gone reports whether no live process has pid (a zombie left for an init
// that does not reap counts as gone).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// Closing the runtime stops the stdio server and what it started: no
// orphans.
func TestCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	rt, err := mcpclient.Open(context.Background(), base(t), []mcpclient.Server{{Name: "ext", Command: stdioCommand(t)}}, mcpclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	server, _ := strconv.Atoi(call(t, rt, "ext__pid", nil).Content)
	child, _ := strconv.Atoi(call(t, rt, "ext__spawn", nil).Content)
	if server <= 0 || child <= 0 || gone(server) || gone(child) {
		t.Fatalf("server pid %d, child pid %d: not running", server, child)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	// The server is waited for by Close; the child, killed, may take a
	// moment to be reaped by init.
	if !gone(server) {
		t.Fatalf("the server (pid %d) still runs after Close", server)
	}
	for i := 0; !gone(child); i++ {
		if i == 100 {
			t.Fatalf("the server's child (pid %d) still runs after Close", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A scripted run calls a tool of the external server and gets its result;
// the trace records the call like any tool's: the name and the argument
// keys, never the values.
func TestScriptedRun(t *testing.T) {
	t.Parallel()
	for name, server := range transports(t) {
		t.Run(name, func(t *testing.T) {
			rt := open(t, server(t), mcpclient.Config{})
			m := model.NewScript(
				`{"type":"tool_call","tool_name":"ext__echo","arguments":{"text":"sunny-42","times":1}}`,
				`{"type":"finish","answer":"done"}`,
			)
			var buf bytes.Buffer
			tw := trace.NewWriter(&buf, trace.SyncNone)
			var seen []gen.Observation
			res, err := agent.Run(context.Background(), gen.Task{Prompt: "echo"}, m, agent.Options{Tools: rt, Trace: tw, Observer: func(p agent.Progress) {
				if p.Observation != nil {
					seen = append(seen, *p.Observation)
				}
			}})
			if err != nil || res.ExitReason != gen.ExitReasonFinished {
				t.Fatalf("run: %v %+v", err, res)
			}
			if len(seen) != 1 || seen[0].IsError || seen[0].Content != `{"echo":"sunny-42"}` {
				t.Fatalf("observations %+v", seen)
			}
			out := buf.String()
			if strings.Contains(out, "sunny-42") {
				t.Fatalf("the trace holds an argument value:\n%s", out)
			}
			if !strings.Contains(out, `"tool_name":"ext__echo"`) || !strings.Contains(out, `"argument_keys":["text","times"]`) {
				t.Fatalf("the trace does not record the call's name and keys:\n%s", out)
			}
		})
	}
}

// serveTool serves one tool with the given name and raw input schema.
func serveTool(t *testing.T, name string, schema string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "one", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(schema)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A server whose tools cannot be offered is refused at start, with a
// message naming the server and the tool.
func TestConnectRefusesUnusableTools(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, tool, schema, want string }{
		{"name", "get.weather", `{"type":"object"}`, "get.weather"},
		{"long name", strings.Repeat("t", 70), `{"type":"object"}`, "valid tool name"},
		{"remote ref", "weather", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "input schema"},
		{"invalid schema", "weather", `{"type":"object","properties":{"a":{"type":"nope"}}}`, "input schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcpclient.Connect(context.Background(), mcpclient.Server{Name: "ext", URL: serveTool(t, tc.tool, tc.schema)}, mcpclient.Config{})
			if err == nil || !strings.Contains(err.Error(), `"ext"`) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect: %v; want an error naming the server and %q", err, tc.want)
			}
		})
	}
}

func TestNameClashRefused(t *testing.T) {
	t.Parallel()
	url := serveTool(t, "weather", `{"type":"object"}`)
	var sessions []*mcpclient.Session
	for range 2 {
		s, err := mcpclient.Connect(context.Background(), mcpclient.Server{Name: "ext", URL: url}, mcpclient.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		sessions = append(sessions, s)
	}
	if _, err := mcpclient.NewRuntime(base(t), sessions...); err == nil || !strings.Contains(err.Error(), "ext__weather") {
		t.Fatalf("NewRuntime: %v; want a clash naming ext__weather", err)
	}
	if _, err := mcpclient.Open(context.Background(), base(t), []mcpclient.Server{{Name: "ext", URL: url}, {Name: "ext", URL: url}}, mcpclient.Config{}); err == nil {
		t.Fatal("Open accepted one name twice")
	}
}

// A stdio server that never answers the handshake fails Connect within
// the connect timeout, and is stopped.
func TestConnectTimeoutStopsTheServer(t *testing.T) {
	t.Parallel() // it waits for the server to be stopped, beside the schema-budget tests' work
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	// The marker is in the shell's arguments and then in sleep's: the
	// check finds the server whenever the timeout caught it, even before
	// it wrote its pid (a loaded machine can take the 300 ms to start it).
	marker := fmt.Sprintf("1000.%d", rand.IntN(1e9))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := mcpclient.Connect(ctx, mcpclient.Server{Name: "mute", Command: []string{"sh", "-c", "exec sleep " + marker}}, mcpclient.Config{})
	if err == nil || !strings.Contains(err.Error(), `"mute"`) {
		t.Fatalf("Connect: %v", err)
	}
	for _, pid := range withArg(marker) {
		if !gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server (pid %d) still runs", pid)
		}
	}
}

// withArg lists the processes with an argument that contains s.
func withArg(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

// A huge result is clipped for the model, saying so.
func TestLargeResultClipped(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("é", mcpclient.MaxContentBytes)}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	rt := open(t, mcpclient.Server{Name: "big", URL: ts.URL}, mcpclient.Config{})
	obs := call(t, rt, "big__dump", nil)
	if obs.IsError || len(obs.Content) > mcpclient.MaxContentBytes+100 || !strings.Contains(obs.Content, "clipped: 524288 bytes") || !utf8.ValidString(obs.Content) {
		t.Fatalf("a %d-byte result became %d bytes ending %q", 2*mcpclient.MaxContentBytes, len(obs.Content), obs.Content[len(obs.Content)-60:])
	}
}
