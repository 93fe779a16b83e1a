package server

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/sdk"
)

type wrapped struct{ m agent.Model }

func (w *wrapped) NextAction(ctx context.Context, t gen.Task, h agent.History) (agent.Action, error) {
	return w.m.NextAction(ctx, t, h)
}

func TestLeakDebug(t *testing.T) {
	var ptrs []weak.Pointer[wrapped]
	var jobs []weak.Pointer[job]
	s, err := New(Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), Models: func(mc gen.ModelConfig, tools []gen.ToolSpec) (agent.Model, error) {
		v, _ := mc.AsScriptModelConfig()
		w := &wrapped{m: model.NewScript(v.Responses...)}
		ptrs = append(ptrs, weak.Make(w))
		return w, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	c, _ := sdk.New(hs.URL, sdk.Config{})
	for i := 0; i < 50; i++ {
		r, err := c.CreateRun(context.Background(), gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}, Model: sdk.ScriptModel(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`, `{"type":"finish","answer":"x"}`)})
		if err != nil {
			t.Fatal(err)
		}
		s.runs.mu.RLock()
		if j := s.runs.byID[r.Id].job; j != nil {
			jobs = append(jobs, weak.Make(j))
		}
		s.runs.mu.RUnlock()
		for { rr, _ := c.GetRun(context.Background(), r.Id); if rr.Status == gen.RunStatusFinished { break }; time.Sleep(time.Millisecond) }
		if false {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	alive, jalive := 0, 0
	for _, p := range ptrs {
		if p.Value() != nil {
			alive++
		}
	}
	for _, p := range jobs {
		if p.Value() != nil {
			jalive++
		}
	}
	t.Logf("%d of %d models alive, %d of %d jobs", alive, len(ptrs), jalive, len(jobs))
}
