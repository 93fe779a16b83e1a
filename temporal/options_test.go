package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// seenModel writes a 40-line file, reads it back and finishes, choosing by
// the length of the history (so that a fresh copy in each Model activity
// goes on where the run is); it records the last history item it saw.
type seenModel struct {
	mu   sync.Mutex
	last string
}

func (m *seenModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	h := req.History
	if n := h.Len(); n > 0 {
		w, err := h.At(n - 1).Wire()
		if err != nil {
			return agent.Turn{}, err
		}
		b, err := json.Marshal(w)
		if err != nil {
			return agent.Turn{}, err
		}
		m.mu.Lock()
		m.last = string(b)
		m.mu.Unlock()
	}
	var raw string
	switch h.Len() {
	case 0:
		raw = `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"long.txt","content":"` + strings.Repeat(`line\n`, 40) + `"}}`
	case 2:
		raw = `{"type":"tool_call","tool_name":"read_file","arguments":{"path":"long.txt"}}`
	default:
		raw = `{"type":"finish","answer":"read"}`
	}
	var tc gen.ToolCall
	if err := json.Unmarshal([]byte(raw), &tc); err == nil && tc.Type == gen.ToolCallTypeToolCall {
		return agent.Turn{Actions: []agent.Action{{ToolCall: &tc}}}, nil
	}
	var f gen.Finish
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		return agent.Turn{}, err
	}
	return agent.Turn{Actions: []agent.Action{{Finish: &f}}}, nil
}

// The run's observation caps reach the workflow's loop: with
// max_observation_lines 4 the model sees the read file capped, as the
// in-process loop shows it, not the whole file.
func TestObservationCapsReachTheWorkflow(t *testing.T) {
	t.Parallel()
	const lines = 4
	embeddedModel := &seenModel{}
	var buf bytes.Buffer
	in := scriptInput(nil, "", 0)
	in.MaxObservationLines = ptr(lines)
	sp := in.Spec
	host := baseSetup()
	host.Dir, host.TraceWriter = t.TempDir(), &buf
	s, err := runner.Open(context.Background(), &sp, host)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wantRes, _ := agent.Run(context.Background(), gen.Task{Prompt: "multiply"}, embeddedModel, s.Options)

	wfModel := &seenModel{}
	h := newHarnessWith(t, func(gen.ModelConfig) (agent.Model, error) { return wfModel, nil })
	gotRes, _ := h.run(t, in)

	if diff := cmp.Diff(wantRes, gotRes); diff != "" {
		t.Errorf("RunResult differs (-embedded +temporal):\n%s", diff)
	}
	if wfModel.last != embeddedModel.last {
		t.Fatalf("the workflow's model saw\n%s\nthe in-process one\n%s", wfModel.last, embeddedModel.last)
	}
	var obs gen.Observation
	if err := json.Unmarshal([]byte(wfModel.last), &obs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(obs.Content, "\n"); n > lines || !strings.Contains(obs.Content, "omitted") {
		t.Fatalf("the model saw %d lines of the read file, want at most %d with the cut marked: %q", n, lines, obs.Content)
	}
}

// A run's MCP servers are resolved by name on the worker's configuration:
// a name the worker lacks ends the run internal_error, naming the field,
// before any model call.
func TestUnknownMCPServerOnTheWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{finish}, "", 0)
	in.McpServers = &[]string{"docs"}
	res, _ := h.run(t, in)
	if res.ExitReason != gen.ExitReasonInternalError || res.Error == nil || !strings.Contains(*res.Error, "/mcp_servers/0") || res.StepsUsed != 0 {
		t.Fatalf("run: %+v (error %v)", res, res.Error)
	}
}
