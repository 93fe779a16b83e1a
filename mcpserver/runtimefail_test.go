package mcpserver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpserver"
)

// failingRuntime offers the tools of a real runtime and fails every call
// internally, as a runtime does when the host's file system breaks.
type failingRuntime struct{ specs []gen.ToolSpec }

func (f failingRuntime) Specs() []gen.ToolSpec { return f.specs }
func (f failingRuntime) Call(context.Context, *gen.ToolCall) (gen.Observation, error) {
	return gen.Observation{}, errors.New("write /srv/host-only/workspace/.tmp: input/output error")
}

// lockedBuffer is a log sink the server's goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A runtime that fails internally is the server's problem: its error,
// which may name host paths, goes to the server's log, and the client
// learns only that the call could not be answered.
func TestRuntimeFailureStaysInTheLog(t *testing.T) {
	rt, _ := runtime(t)
	var logs lockedBuffer
	cs := connectWith(t, failingRuntime{rt.Specs()}, mcpserver.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err == nil {
		t.Fatalf("a failed runtime answered %+v", res)
	}
	if strings.Contains(err.Error(), "/srv/host-only") {
		t.Errorf("the client sees the runtime's internal error: %v", err)
	}
	if !strings.Contains(logs.String(), "/srv/host-only") {
		t.Errorf("the server's log does not record the runtime's error:\n%s", logs.String())
	}
}
