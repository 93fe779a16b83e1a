package modeltest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/internal/adapt"
	"github.com/specloop/specloop/tools"
)

// StandInBytesPerToken is how the provider stand-ins of the adapters' tests
// count a request's tokens: about 4 bytes of text per token, OpenAI's rule
// of thumb for English. The adapters estimate with fewer bytes per token
// (more tokens), so an adapter that keeps its estimate within a window
// keeps the stand-in's count within it too.
const StandInBytesPerToken = 4

// StandInTokens is a stand-in's token count of a request body.
func StandInTokens(body []byte) int { return len(body) / StandInBytesPerToken }

// SummaryInstruction is what marks a request as a model's summarization
// call (agent.Request.Summarize) to a stand-in.
const SummaryInstruction = adapt.SummaryInstruction

// Summary is a stand-in's answer to a summarization request.
const Summary = "The task: read data.txt in parts. Done so far: the parts before the last ones; nothing was changed."

// MaxOverhead is the most bytes of harness a provider request may carry:
// the system prompt and the tool definitions, with all built-in tools.
const MaxOverhead = 12 << 10

// RunContext checks an adapter's side of context management over its
// stand-in: RequestTokens estimates the very request sent, conservatively;
// a refusal as over the window wraps agent.ErrContextLength and is not
// retried; the prefix is byte-identical across the steps of a run; a
// 200-step run against a 16k-token window (agent.Run compacting the
// history) never sends a request over it; and the prefix with all built-in
// tools stays within MaxOverhead.
func RunContext(t *testing.T, p Provider) {
	standIn := func(tb testing.TB, window int, turns []Turn) (agent.Model, *Server) {
		s := Scripted(tb, p.Codec, window, turns)
		return p.New(tb, s, Config{ContextWindow: window}), s
	}
	t.Run("RequestTokens", func(t *testing.T) {
		for _, h := range []agent.History{agent.NewHistory(), LongHistory(3, 100), LongHistory(40, 2000)} {
			m, srv := standIn(t, 0, []Turn{Finish("84")})
			sizer := contextSizer(t, m)
			req := Request(t, h)
			est := sizer.RequestTokens(req)
			if _, err := m.Next(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := srv.Bodies()[0]
			if want := adapt.EstimateTokens(body); est != want {
				t.Fatalf("history of %d items: estimate %d tokens, want %d, the sent body's (%d bytes)", h.Len(), est, want, len(body))
			}
			if est < StandInTokens(body) {
				t.Fatalf("estimate %d is below the provider's count %d", est, StandInTokens(body))
			}
		}
	})
	t.Run("OverWindow", func(t *testing.T) {
		m, srv := standIn(t, 1000, []Turn{Finish("84")})
		_, err := m.Next(context.Background(), Request(t, LongHistory(5, 1000)))
		if !errors.Is(err, agent.ErrContextLength) {
			t.Fatalf("err = %v, want agent.ErrContextLength", err)
		}
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != 400 || pe.Retries != 0 || len(srv.Bodies()) != 1 {
			t.Fatalf("err = %v after %d requests, want one 400 ProviderError", err, len(srv.Bodies()))
		}
		if strings.Contains(err.Error(), "tokens") {
			t.Fatalf("the error repeats the provider's message: %v", err)
		}
		if _, err := m.Next(context.Background(), Request(t, agent.NewHistory())); err != nil {
			t.Fatalf("a request within the window: %v", err)
		}
	})
	t.Run("PrefixStable", func(t *testing.T) {
		turns := []Turn{multiply(), Parallel(multiply(), subtract()), Invalid(), Finish("4")}
		m, srv := standIn(t, 0, turns)
		if res, _ := run(t, m, len(turns)); res.ExitReason != gen.ExitReasonFinished {
			t.Fatalf("result = %+v", res)
		}
		bodies := srv.Bodies()
		first := p.Prefix(t, bodies[0])
		for i, body := range bodies[1:] {
			if !bytes.Equal(p.Prefix(t, body), first) {
				t.Fatalf("request %d: the system prompt and tools differ from request 1's, which defeats prompt caching", i+2)
			}
		}
	})
	// A long run against a small window over the stand-in: the loop
	// compacts (elides old outputs, then has the model summarize) and no
	// request ever passes the window.
	t.Run("LongRun", func(t *testing.T) {
		if testing.Short() {
			t.Skip("200 provider requests (about 1 s, 10 s under -race): run without -short")
		}
		const window, steps = 16_000, 200
		dir := t.TempDir()
		var data strings.Builder
		for i := range 2000 {
			data.WriteString("line " + strconv.Itoa(i+1) + ": " + strings.Repeat("lorem ipsum ", 6) + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, dataFile), []byte(data.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		ws, err := tools.OpenWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
		if err != nil {
			t.Fatal(err)
		}
		turns := make([]Turn, 0, steps)
		for i := range steps - 1 {
			// Every call differs: a run that moves on is never stuck.
			start := 1 + i*10
			turns = append(turns, Call(readFile, map[string]any{"path": dataFile, "start_line": float64(start), "end_line": float64(start + 19)}))
		}
		turns = append(turns, Finish("read it all"))
		m, srv := standIn(t, window, turns)
		var rec Recorder
		res, err := agent.Run(context.Background(), Task, m, agent.Options{MaxSteps: steps, Tools: rt, Trace: &rec})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != steps {
			t.Fatalf("result %+v, err %v; want finished in %d steps", res, err, steps)
		}
		compacted, summarized := 0, 0
		for _, ev := range rec.Events {
			if ev.EventType == gen.TraceEventTypeHistoryCompacted {
				compacted++
			}
		}
		for i, body := range srv.Bodies() {
			if n := StandInTokens(body); n > window {
				t.Fatalf("request %d has %d tokens, over the %d window", i+1, n, window)
			}
			if bytes.Contains(body, []byte(SummaryInstruction)) {
				summarized++
			}
		}
		if compacted == 0 || summarized == 0 {
			t.Fatalf("%d history_compacted events and %d summarization requests, want at least one of each", compacted, summarized)
		}
		t.Logf("%d requests, %d compactions, %d summaries", len(srv.Bodies()), compacted, summarized)
	})
	t.Run("OverheadBudget", func(t *testing.T) {
		m, srv := standIn(t, 0, []Turn{Finish("84")})
		req := Request(t, agent.NewHistory())
		req.Tools = AllTools(t)
		if _, err := m.Next(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		n := len(p.Prefix(t, srv.Bodies()[0]))
		if n > MaxOverhead {
			t.Fatalf("system prompt + tools = %d bytes, more than %d", n, MaxOverhead)
		}
		t.Logf("system prompt + tools = %d bytes", n)
	})
}

// The long run reads this file with this tool.
const (
	dataFile = "data.txt"
	readFile = "read_file"
)

func contextSizer(t *testing.T, m agent.Model) agent.ContextSizer {
	t.Helper()
	s, ok := m.(agent.ContextSizer)
	if !ok {
		t.Fatal("the model is not an agent.ContextSizer")
	}
	return s
}

// LongHistory returns a history of n calculator calls, each answered by an
// observation of size bytes, for tests of context windows.
func LongHistory(n, size int) agent.History {
	var items []agent.Item
	for i := range n {
		id := "call_" + strconv.Itoa(i)
		items = append(items,
			agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: calculatorTool, CallId: &id, Arguments: map[string]any{"left": float64(i), "operation": string(gen.CalculatorOperationAdd), "right": 1.0}}},
			agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: calculatorTool, CallId: &id, Content: strings.Repeat("x", size)}},
		)
	}
	return agent.NewHistory(items...)
}

// AllTools returns the specs of every built-in tool (commands included),
// over a temporary workspace.
func AllTools(tb testing.TB) []gen.ToolSpec {
	tb.Helper()
	ws, err := tools.OpenWorkspace(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws})
	if err != nil {
		tb.Fatal(err)
	}
	return rt.Specs()
}

// BenchHistory is a 50-step history for the adapters' benchmarks: 50
// read_file calls, each with an observation of a few hundred bytes.
func BenchHistory() agent.History {
	var items []agent.Item
	content := strings.Repeat("12\tfunc main() { fmt.Println(\"hello\") }\n", 6)
	for i := range 50 {
		id := "call_" + strconv.Itoa(i)
		items = append(items,
			agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: readFile, CallId: &id, Arguments: map[string]any{"path": "main.go", "start_line": float64(i + 1)}}},
			agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: readFile, CallId: &id, Content: content}},
		)
	}
	return agent.NewHistory(items...)
}

// BenchRequest is the request of the adapters' benchmarks: BenchHistory
// with all built-in tools.
func BenchRequest(b *testing.B) *agent.Request {
	return &agent.Request{Task: gen.Task{Prompt: "Find the bug in main.go and fix it."}, History: BenchHistory(), Tools: AllTools(b)}
}

// BenchmarkNext is a whole Next of BenchRequest against a local server
// that answers at once with reply: the adapter, its HTTP layer and loopback HTTP.
func BenchmarkNext(b *testing.B, p Provider, reply []byte) {
	m := p.New(b, Forever(b, p.Codec, reply), Config{})
	req := BenchRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Next(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
