package temporal_test

import (
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// A follow-up on Temporal goes on from its conversation: the Open
// activity rebuilds the history from the first run's transcript in the
// store, the model gets it and the person's message, and the follow-up's
// transcript starts with the message.
func TestFollowUpOnTemporalGetsTheConversationsHistory(t *testing.T) {
	t.Parallel()
	m := &finishModel{answer: "85"}
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
	next.Conversation = append(next.Conversation, runner.Turn{Spec: first.Spec})
	res, _ := h.run(t, next)
	if res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != "85" {
		t.Fatalf("follow-up: %+v", res)
	}
	seen := strings.Join(m.history, "\n")
	for _, want := range []string{`"tool_name":"calculator"`, `"content":"84"`, `"finish"`, `"text":"Now add one."`} {
		if !strings.Contains(seen, want) {
			t.Errorf("the follow-up's model saw no %s in its history:\n%s", want, seen)
		}
	}
	path, err := h.store.TranscriptPath("run2")
	if err != nil {
		t.Fatal(err)
	}
	if entries := readTranscript(t, path); len(entries) == 0 || !strings.Contains(entries[0], `"task":"Now add one."`) {
		t.Errorf("the follow-up's transcript starts %q, want the person's message", entries)
	}
}
