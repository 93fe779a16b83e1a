package openai_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/model/modeltest"
)

// TestSummarize: on the wire (the rest is modeltest's Summarize), Next's
// messages unchanged, the instruction as a last user message and
// tool_choice none.
func TestSummarize(t *testing.T) {
	t.Parallel()
	s := modeltest.Scripted(t, codec, 0, []modeltest.Turn{modeltest.Finish("84")})
	m := newModel(t, s, nil)
	req := modeltest.Request(t, modeltest.LongHistory(3, 50))
	if _, err := m.Next(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Summarize = true
	if _, err := m.Next(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	turn, sum := s.Requests()[0], s.Requests()[1]
	if sum["tool_choice"] != "none" {
		t.Fatalf("tool_choice = %v, want none", sum["tool_choice"])
	}
	turnMsgs, sumMsgs := messages(t, turn), messages(t, sum)
	if diff := cmp.Diff(turnMsgs, sumMsgs[:len(sumMsgs)-1]); diff != "" || len(sumMsgs) != len(turnMsgs)+1 {
		t.Fatalf("the summary request's messages are not Next's and the instruction (-next +summary):\n%s", diff)
	}
	if last := sumMsgs[len(sumMsgs)-1]; last["role"] != "user" || last["content"] != modeltest.SummaryInstruction {
		t.Fatalf("last message = %v, want the summary instruction", last)
	}
}
