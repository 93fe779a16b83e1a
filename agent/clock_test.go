package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// With Options.Clock every event time and duration comes from that clock,
// so a workflow engine that replays the loop gets the same events: the
// clock here ticks one second per reading.
func TestClockDrivesEveryTime(t *testing.T) {
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var ticks int
	clock := func() time.Time {
		ticks++
		return base.Add(time.Duration(ticks) * time.Second)
	}
	var k keeper
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(multiply, finish),
		agent.Options{RunID: "r1", Tools: calculatorRuntime(t), Trace: &k, Clock: clock})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v %v", res, err)
	}
	last := base
	for i, ev := range k.seen {
		if ev.Time.Before(base) || ev.Time.After(base.Add(time.Duration(ticks)*time.Second)) {
			t.Fatalf("event %d (%s) at %v, not from the clock", i, ev.EventType, ev.Time)
		}
		if ev.Time.Before(last) {
			t.Fatalf("event %d (%s) at %v, before the previous event", i, ev.EventType, ev.Time)
		}
		last = ev.Time
		for name, d := range map[string]*float64{"model": ev.ModelDurationMs, "tool": ev.ToolDurationMs} {
			if d != nil && (*d < 1000 || *d != float64(int64(*d/1000))*1000) {
				t.Fatalf("event %d (%s): %s duration %v ms, not whole clock ticks", i, ev.EventType, name, *d)
			}
		}
	}
	fin := k.seen[len(k.seen)-1]
	if fin.DurationMs == nil || *fin.DurationMs != float64(ticks-1)*1000 {
		t.Fatalf("run duration %v ms, want %d ticks of the clock", fin.DurationMs, ticks-1)
	}
}
