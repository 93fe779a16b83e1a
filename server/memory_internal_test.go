package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
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
// server; only the compact record does. This is what keeps 10,000 finished
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
	body := `{"task":{"prompt":"p"},"model":{"provider":"script","responses":[` +
		`"{\"type\":\"tool_call\",\"tool_name\":\"calculator\",\"arguments\":{\"left\":1,\"operation\":\"add\",\"right\":2}}",` +
		`"{\"type\":\"finish\",\"answer\":\"3\"}"]}}`
	var ids []string
	for range 20 {
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/runs", strings.NewReader(body)) // a loopback Host: the server has no token
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		var r gen.Run
		if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || r.Id == "" {
			t.Fatalf("create: %d %s", w.Code, w.Body)
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
