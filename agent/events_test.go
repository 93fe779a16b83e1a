package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// keeper records the events a Tracer was given and their JSON at the time.
type keeper struct {
	seen []*gen.TraceEvent
	json [][]byte
}

func (k *keeper) Emit(ev *gen.TraceEvent) error {
	b, err := json.Marshal(ev)
	k.seen = append(k.seen, ev)
	k.json = append(k.json, b)
	return err
}

// A Tracer may keep every event it is given: each is new, and the loop
// never changes it afterwards, so the trace written from the kept events
// equals the one written as they arrived.
func TestTracerMayKeepEvents(t *testing.T) {
	responses := []string{
		multiply, "not json", `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`,
		`{"type":"tool_call","tool_name":"shell","call_id":"c7","arguments":{"a":1,"b":2,"c":3,"d":4,"e":5}}`, `{"type":"finish"}`,
		multiply, finish,
	}
	var k keeper
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...),
		agent.Options{MaxSteps: 10, RunID: "r1", Tools: calculatorRuntime(t), Trace: &k, RecordRaw: true})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v %v", res, err)
	}
	if len(k.seen) != 13 {
		t.Fatalf("%d events, want 13", len(k.seen))
	}
	distinct := map[*gen.TraceEvent]bool{}
	for i, ev := range k.seen {
		distinct[ev] = true
		after, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after, k.json[i]) {
			t.Fatalf("event %d changed after Emit:\nthen %s\nnow  %s", i, k.json[i], after)
		}
	}
	if len(distinct) != len(k.seen) {
		t.Fatalf("%d distinct events for %d emitted", len(distinct), len(k.seen))
	}
}

// History views stay valid and unchanged while the run goes on and its
// history grows.
func TestHistoryViewsStayValid(t *testing.T) {
	const steps = 150 // 300 items
	responses := make([]string, 0, steps+1)
	for range steps {
		responses = append(responses, multiply)
	}
	script := model.NewScript(append(responses, finish)...)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: steps + 1, Tools: calculatorRuntime(t), Stuck: agent.StuckDetection{Disabled: true}})
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
