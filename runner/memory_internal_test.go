package runner

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// trackedModel lets the test see when a run's model is garbage.
type trackedModel struct{ agent.Model }

// TestFinishedRunsKeepOnlyTheirRecord: once a run finished, nothing of its
// execution (model, history, tools, trace writer) stays reachable from the
// runner; only the compact record does. This is what keeps 10,000 finished
// runs cheap.
func TestFinishedRunsKeepOnlyTheirRecord(t *testing.T) {
	var models []weak.Pointer[trackedModel]
	s, err := New(Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), Models: func(mc gen.ModelConfig) (agent.Model, error) {
		m, err := DefaultModels(mc)
		tm := &trackedModel{m}
		models = append(models, weak.Make(tm))
		return tm, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}}
	if err := req.Model.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":2}}`,
		`{"type":"finish","answer":"3"}`}}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 20 {
		r, err := s.Create(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Id)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			r, _ := s.runs.get(id)
			if r.Status == gen.RunStatusFinished {
				if r.Result.Answer == nil || *r.Result.Answer != "3" {
					t.Fatalf("run %s: %+v", id, r.Result)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not finish", id)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A run's goroutine ends just after its record is final.
	deadline = time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		alive := 0
		for _, m := range models {
			if m.Value() != nil {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d finished runs still hold their model", alive, len(models))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
