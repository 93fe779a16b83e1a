package temporal_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/transcript"
)

// historyModel finishes at once, keeping the history it was given as
// JSON lines.
type historyModel struct {
	mu   sync.Mutex
	seen []string
}

func (m *historyModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range req.History.Len() {
		w, err := req.History.At(i).Wire()
		if err != nil {
			return agent.Turn{}, err
		}
		b, _ := json.Marshal(w)
		m.seen = append(m.seen, string(b))
	}
	return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "85"}}}}, nil
}

// A follow-up on Temporal goes on from its conversation: the Open
// activity rebuilds the history from the first run's transcript in the
// store, the model gets it and the person's message, and the follow-up's
// transcript starts with the message.
func TestFollowUpOnTemporalGetsTheConversationsHistory(t *testing.T) {
	m := &historyModel{}
	h := newHarnessWith(t, func(cfg gen.ModelConfig) (agent.Model, error) {
		if sc, err := cfg.AsScriptModelConfig(); err == nil && len(sc.Responses) == 0 {
			return m, nil
		}
		return scriptModels(cfg)
	})
	first := scriptInput([]string{multiply, finish}, "", 0)
	if res, _ := h.run(t, first); res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("first run: %+v", res)
	}
	h.newEnv()
	next := scriptInput(nil, "", 0)
	next.ID = "run2"
	next.FollowUp = &agent.FollowUp{Message: "Now add one."}
	next.Conversation = append(next.Conversation, first.Spec)
	res, _ := h.run(t, next)
	if res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != "85" {
		t.Fatalf("follow-up: %+v", res)
	}
	seen := strings.Join(m.seen, "\n")
	for _, want := range []string{`"tool_name":"calculator"`, `"content":"84"`, `"finish"`, `"text":"Now add one."`} {
		if !strings.Contains(seen, want) {
			t.Errorf("the follow-up's model saw no %s in its history:\n%s", want, seen)
		}
	}
	path, err := h.store.TranscriptPath("run2")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Entries) == 0 || log.Entries[0].Task == nil || *log.Entries[0].Task != "Now add one." {
		t.Errorf("the follow-up's transcript starts %+v, want the person's message", log.Entries)
	}
}
