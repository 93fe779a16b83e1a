package openai

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// history50 is a 50-step history: 50 tool calls, each with an observation
// of a few hundred characters.
func history50() agent.History {
	var items []agent.Item
	content := strings.Repeat("12\tfunc main() { fmt.Println(\"hello\") }\n", 6)
	for i := range 50 {
		id := "call_" + strconv.Itoa(i)
		items = append(items,
			agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", CallId: &id, Arguments: map[string]any{"path": "main.go", "start_line": float64(i + 1)}}},
			agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "read_file", CallId: &id, Content: content}},
		)
	}
	return agent.NewHistory(items...)
}

func benchModel(b *testing.B, baseURL string) (*Model, []gen.ToolSpec) {
	b.Helper()
	ws, err := tools.OpenWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(Config{Model: "gpt-4o-mini", BaseURL: baseURL})
	if err != nil {
		b.Fatal(err)
	}
	return m, rt.Specs()
}

// BenchmarkAdapterOverhead is the adapter's work per model call: build and
// encode the request for a 50-step history, decode a response and turn it
// into an action. (BenchmarkNextHTTP adds the HTTP layer and loopback HTTP; history50 is modeltest.BenchHistory, which
// this package's own tests cannot import.)
func BenchmarkAdapterOverhead(b *testing.B) {
	body, err := os.ReadFile("testdata/tool_call.json")
	if err != nil {
		b.Fatal(err)
	}
	m, specs := benchModel(b, "http://127.0.0.1:1/v1")
	req := &agent.Request{Task: gen.Task{Prompt: "Find the bug in main.go and fix it."}, History: history50(), Tools: specs}
	ts, _, err := m.Request(req) // the run's toolset, as every step gets it from the cache
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(m, req); err != nil {
			b.Fatal(err)
		}
		var d decoder
		if err := d.Body(body); err != nil {
			b.Fatal(err)
		}
		if _, err := ts.Turn(d.Reply()); err != nil {
			b.Fatal(err)
		}
	}
}
