package temporal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// instructionsModel finishes at once, keeping the instructions it was
// given.
type instructionsModel struct {
	mu   sync.Mutex
	seen []string
}

func (m *instructionsModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := "(none)"
	if req.Task.Instructions != nil {
		in = *req.Task.Instructions
	}
	m.seen = append(m.seen, in)
	return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "done"}}}}, nil
}

// A run on Temporal reads its workspace's AGENTS.md once, in the Open
// activity: the Model activity's model gets it as the task's
// instructions, and run_started lists it, as on the embedded engine.
func TestTemporalRunsReadTheWorkspacesDocs(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user file
	m := &instructionsModel{}
	h := newHarnessWith(t, func(gen.ModelConfig) (agent.Model, error) { return m, nil })
	if err := os.WriteFile(filepath.Join(h.root, "AGENTS.md"), []byte("Run gofmt before you finish.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, evs := h.run(t, scriptInput(nil, "", 0))
	if res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result %+v", res)
	}
	if len(m.seen) != 1 || !strings.Contains(m.seen[0], "# Instructions from AGENTS.md\n\nRun gofmt before you finish.") {
		t.Errorf("the model got the instructions %q", m.seen)
	}
	docs := evs[0].ProjectDocs
	if evs[0].EventType != gen.TraceEventTypeRunStarted || docs == nil || len(*docs) != 1 || (*docs)[0].Path != "AGENTS.md" || (*docs)[0].Size != 29 {
		t.Errorf("run_started's project docs %+v, want AGENTS.md of 29 bytes", docs)
	}
}
