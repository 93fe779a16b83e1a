package mcpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverArg, the only argument, switches the test binary into an MCP stdio
// server (the test re-executes itself as the external server). An argument,
// not the environment, so that the tests that start one can run in parallel.
const serverArg = "specloop-mcpclient-test-server"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == serverArg {
		if err := testServer(nil, nil).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how many times, 1 to 3"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

type noIn struct{}

// testServer is the external server: echo (with a strict schema and a
// structured result), fail (isError), die (exits mid-call), hang (never
// answers), spawn (starts a child process, returns its pid), pid and env
// (its environment).
// calls, when set, counts the calls that reached it; closing stop ends
// the calls of hang.
func testServer(calls *atomic.Int64, stop <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "v1"}, nil)
	count := func() {
		if calls != nil {
			calls.Add(1)
		}
	}
	echoSchema := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"text"},
		"properties": map[string]any{
			"text":  map[string]any{"type": "string", "maxLength": 100},
			"times": map[string]any{"type": "integer", "minimum": 1, "maximum": 3},
		},
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text.", InputSchema: echoSchema},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			count()
			n := max(in.Times, 1)
			return nil, echoOut{Echo: strings.Repeat(in.Text, n)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
			count()
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the weather service is down"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Exits the server mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
			count()
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
			count()
			select {
			case <-ctx.Done():
			case <-stop:
			}
			return nil, nil, errors.New("stopped")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Starts a long-lived child process and returns its pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
			count()
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
			count()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns the server's environment, one NAME=VALUE a line."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
			count()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	return s
}

// httpServer serves testServer over streamable HTTP and returns its URL
// and the counter of calls that reached it.
func httpServer(t *testing.T) (string, *atomic.Int64) {
	url, calls, _ := httpServerStop(t)
	return url, calls
}

// httpServerStop is httpServer that also returns a function ending the
// calls of hang.
func httpServerStop(t *testing.T) (string, *atomic.Int64, func()) {
	t.Helper()
	calls := &atomic.Int64{}
	stop := make(chan struct{})
	release := sync.OnceFunc(func() { close(stop) })
	srv := testServer(calls, stop)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}))
	t.Cleanup(func() {
		release()
		ts.Close()
	})
	return ts.URL, calls, release
}

// stdioCommand returns the command line of the test binary as a stdio
// server.
func stdioCommand(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, serverArg}
}
