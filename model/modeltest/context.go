package modeltest

import (
	"bytes"
	"context"
	"errors"
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

// MaxOverhead is the most bytes of harness a provider request may carry:
// the system prompt and the tool definitions, with all built-in tools.
const MaxOverhead = 12 << 10

// StandIn is a model talking to an httptest stand-in of its provider.
type StandIn struct {
	Model agent.Model
	// Sent returns the request bodies the stand-in received so far.
	Sent func() [][]byte
}

// ContextSuite is what RunContext needs of an adapter.
type ContextSuite struct {
	// New returns a model offered specs, talking to a stand-in that
	// answers with turns in order and, when window is positive, refuses a
	// request of more than window tokens (StandInTokens) with the
	// provider's real "context length exceeded" error.
	New func(tb testing.TB, specs []gen.ToolSpec, window int, turns []Turn) StandIn
	// Prefix returns the part of a request body that must be the same in
	// every request of a run (the system prompt and the tool definitions).
	Prefix func(tb testing.TB, body []byte) []byte
}

// RunContext checks an adapter's side of context management over its
// stand-in: RequestTokens estimates the very request sent, conservatively;
// a refusal as over the window wraps agent.ErrContextLength and is not
// retried; the prefix is byte-identical across the steps of a run; and the
// prefix with all built-in tools stays within MaxOverhead.
func RunContext(t *testing.T, s ContextSuite) {
	t.Run("RequestTokens", func(t *testing.T) {
		for _, h := range []agent.History{agent.NewHistory(), LongHistory(3, 100), LongHistory(40, 2000)} {
			si := s.New(t, Runtime(t).Specs(), 0, []Turn{Finish("84")})
			sizer := contextSizer(t, si.Model)
			est := sizer.RequestTokens(Task, h)
			if _, err := si.Model.NextAction(context.Background(), Task, h); err != nil {
				t.Fatal(err)
			}
			body := si.Sent()[0]
			if want := adapt.EstimateTokens(body); est != want {
				t.Fatalf("history of %d items: estimate %d tokens, want %d, the sent body's (%d bytes)", h.Len(), est, want, len(body))
			}
			if est < StandInTokens(body) {
				t.Fatalf("estimate %d is below the provider's count %d", est, StandInTokens(body))
			}
		}
	})
	t.Run("OverWindow", func(t *testing.T) {
		si := s.New(t, Runtime(t).Specs(), 1000, []Turn{Finish("84")})
		_, err := si.Model.NextAction(context.Background(), Task, LongHistory(5, 1000))
		if !errors.Is(err, agent.ErrContextLength) {
			t.Fatalf("err = %v, want agent.ErrContextLength", err)
		}
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != 400 || pe.Retries != 0 || len(si.Sent()) != 1 {
			t.Fatalf("err = %v after %d requests, want one 400 ProviderError", err, len(si.Sent()))
		}
		if strings.Contains(err.Error(), "tokens") {
			t.Fatalf("the error repeats the provider's message: %v", err)
		}
		if _, err := si.Model.NextAction(context.Background(), Task, agent.NewHistory()); err != nil {
			t.Fatalf("a request within the window: %v", err)
		}
	})
	t.Run("PrefixStable", func(t *testing.T) {
		turns := []Turn{multiply(), Parallel(multiply(), subtract()), Invalid(), Finish("4")}
		si := s.New(t, Runtime(t).Specs(), 0, turns)
		if res, _ := run(t, si.Model, len(turns)); res.ExitReason != gen.ExitReasonFinished {
			t.Fatalf("result = %+v", res)
		}
		bodies := si.Sent()
		first := s.Prefix(t, bodies[0])
		for i, body := range bodies[1:] {
			if !bytes.Equal(s.Prefix(t, body), first) {
				t.Fatalf("request %d: the system prompt and tools differ from request 1's, which defeats prompt caching", i+2)
			}
		}
	})
	t.Run("OverheadBudget", func(t *testing.T) {
		si := s.New(t, AllTools(t), 0, []Turn{Finish("84")})
		if _, err := si.Model.NextAction(context.Background(), Task, agent.NewHistory()); err != nil {
			t.Fatal(err)
		}
		if n := len(s.Prefix(t, si.Sent()[0])); n > MaxOverhead {
			t.Fatalf("system prompt + tools = %d bytes, more than %d", n, MaxOverhead)
		}
	})
}

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

// BenchmarkOverhead reports the harness a request carries with all
// built-in tools (the Prefix of the request the stand-in receives) as
// prefix-bytes; ns/op is only the time to extract it.
func BenchmarkOverhead(b *testing.B, s ContextSuite) {
	si := s.New(b, AllTools(b), 0, []Turn{Finish("84")})
	if _, err := si.Model.NextAction(context.Background(), Task, agent.NewHistory()); err != nil {
		b.Fatal(err)
	}
	body := si.Sent()[0]
	var n int
	for b.Loop() {
		n = len(s.Prefix(b, body))
	}
	b.ReportMetric(float64(n), "prefix-bytes")
}
