package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/trace"
)

// keeper is a Tracer that may keep events: it hides the Writer's
// KeepsEvents, so the loop gives it a new event every time.
type keeper struct{ w *trace.Writer }

func (k keeper) Emit(ev *gen.TraceEvent) error { return k.w.Emit(ev) }

// pointers records the events a Tracer was given, and says it keeps none.
type pointers struct{ seen []*gen.TraceEvent }

func (p *pointers) Emit(ev *gen.TraceEvent) error {
	p.seen = append(p.seen, ev)
	return nil
}
func (p *pointers) KeepsEvents() bool { return false }

// normalized decodes a JSONL trace and drops what differs between two runs:
// times and durations.
func normalized(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		for k := range ev {
			if k == "time" || strings.HasSuffix(k, "_duration_ms") || k == "duration_ms" {
				delete(ev, k)
			}
		}
		out = append(out, ev)
	}
	return out
}

// A Tracer that keeps no events gets one reused event per step event; the
// trace it writes must be the one it would write with new events.
func TestReusedEventsEqualNewOnes(t *testing.T) {
	responses := []string{
		multiply, "not json", `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`,
		`{"type":"tool_call","tool_name":"shell","call_id":"c7","arguments":{"a":1,"b":2,"c":3,"d":4,"e":5}}`, `{"type":"finish"}`,
		multiply, finish,
	}
	run := func(tr agent.Tracer) {
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...),
			agent.Options{MaxSteps: 10, RunID: "r1", Tools: calculatorRuntime(t), Trace: tr, RecordRaw: true})
		if err != nil || res.ExitReason != gen.ExitReasonFinished {
			t.Fatalf("run: %+v %v", res, err)
		}
	}
	var reused, fresh bytes.Buffer
	run(trace.NewWriter(&reused, trace.SyncNone))
	run(keeper{trace.NewWriter(&fresh, trace.SyncNone)})
	want, got := normalized(t, fresh.Bytes()), normalized(t, reused.Bytes())
	if len(want) != 13 {
		t.Fatalf("%d events, want 13", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("trace with reused events (-new events +reused):\n%s", diff)
	}

	// The step events of a run are one reused event; an Observer turns
	// reuse off, since it may keep what it is shown.
	for _, observe := range []bool{false, true} {
		var p pointers
		opts := agent.Options{Tools: calculatorRuntime(t), Trace: &p}
		if observe {
			opts.Observer = func(agent.Progress) {}
		}
		if _, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(multiply, multiply, finish), opts); err != nil {
			t.Fatal(err)
		}
		steps := p.seen[1 : len(p.seen)-1] // between run_started and run_finished
		distinct := map[*gen.TraceEvent]bool{}
		for _, ev := range steps {
			distinct[ev] = true
		}
		if want := map[bool]int{false: 1, true: len(steps)}[observe]; len(distinct) != want {
			t.Errorf("observer %v: %d distinct events for %d step events, want %d", observe, len(distinct), len(steps), want)
		}
	}
}

// History views stay valid and unchanged while the run goes on, across
// the history's segments.
func TestHistoryViewsAcrossSegments(t *testing.T) {
	const steps = 150 // 300 items: several segments
	responses := make([]string, 0, steps+1)
	for range steps {
		responses = append(responses, multiply)
	}
	script := model.NewScript(append(responses, finish)...)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: steps + 1, Tools: calculatorRuntime(t)})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	calls := script.Calls()
	if len(calls) != steps+1 {
		t.Fatalf("%d calls", len(calls))
	}
	for i, c := range calls {
		h := c.History
		if h.Len() != 2*i {
			t.Fatalf("call %d saw %d items, want %d", i, h.Len(), 2*i)
		}
		n := 0
		for j, it := range h.All() {
			if (j%2 == 0) != (it.ToolCall != nil) || (j%2 == 1) != (it.Observation != nil) {
				t.Fatalf("call %d, item %d = %+v", i, j, it)
			}
			if it.Observation != nil && it.Observation.Content != "84" {
				t.Fatalf("call %d, item %d: observation %q", i, j, it.Observation.Content)
			}
			n++
		}
		if n != h.Len() || len(h.Items()) != h.Len() {
			t.Fatalf("call %d: All gave %d items, Items %d, Len %d", i, n, len(h.Items()), h.Len())
		}
		if h.Len() > 0 && h.At(h.Len()-1).Observation == nil {
			t.Fatalf("call %d: last item is not an observation", i)
		}
	}
	last := calls[steps].History
	func() {
		defer func() {
			if recover() == nil {
				t.Error("At past the end of a view did not panic")
			}
		}()
		last.At(last.Len())
	}()
	// NewHistory holds the items given, in order.
	items := last.Items()
	h := agent.NewHistory(items...)
	if diff := cmp.Diff(items, h.Items()); diff != "" {
		t.Fatalf("NewHistory (-want +got):\n%s", diff)
	}
}
