package temporal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// finishModel finishes at once with answer, keeping what it was asked:
// each request's instructions and its history's items as JSON.
type finishModel struct {
	answer       string
	mu           sync.Mutex
	instructions []string
	history      []string
}

func (m *finishModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := "(none)"
	if req.Task.Instructions != nil {
		in = *req.Task.Instructions
	}
	m.instructions = append(m.instructions, in)
	for i := range req.History.Len() {
		w, err := req.History.At(i).Wire()
		if err != nil {
			return agent.Turn{}, err
		}
		b, _ := json.Marshal(w)
		m.history = append(m.history, string(b))
	}
	return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: m.answer}}}}, nil
}

// A run on Temporal reads its workspace's AGENTS.md once, in the Open
// activity: the Model activity's model gets it as the task's
// instructions, and run_started lists it, as on the embedded engine.
func TestTemporalRunsReadTheWorkspacesDocs(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user file
	m := &finishModel{answer: "done"}
	h := newHarnessWith(t, func(gen.ModelConfig) (agent.Model, error) { return m, nil })
	if err := os.WriteFile(filepath.Join(h.root, "AGENTS.md"), []byte("Run gofmt before you finish.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, evs := h.run(t, scriptInput(nil, "", 0))
	if res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result %+v", res)
	}
	if len(m.instructions) != 1 || !strings.Contains(m.instructions[0], "# Instructions from AGENTS.md\n\nRun gofmt before you finish.") {
		t.Errorf("the model got the instructions %q", m.instructions)
	}
	docs := evs[0].ProjectDocs
	if evs[0].EventType != gen.TraceEventTypeRunStarted || docs == nil || len(*docs) != 1 || (*docs)[0].Path != "AGENTS.md" || (*docs)[0].Size != 29 {
		t.Errorf("run_started's project docs %+v, want AGENTS.md of 29 bytes", docs)
	}
}
