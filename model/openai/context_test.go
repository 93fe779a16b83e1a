package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/modeltest"
)

// TestSummarize: one call, Next's request with its prefix unchanged,
// the instruction last and no tool allowed; the reply's text and usage come
// back.
func TestSummarize(t *testing.T) {
	t.Parallel()
	summary := `{"id":"chatcmpl-S","object":"chat.completion","created":1741570283,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":"  The task: compute 12 x 7. Done so far: 3 additions.  "},"finish_reason":"stop"}],
"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940}}`
	s := modeltest.NewServer(t, codec, ok(t, "finish_call.json"), modeltest.OK([]byte(summary)), ok(t, "text_only.json"))
	m := newModel(t, s, nil)
	h := modeltest.LongHistory(3, 50)
	if _, err := m.Next(context.Background(), modeltest.Request(t, h)); err != nil {
		t.Fatal(err)
	}
	sreq := modeltest.Request(t, h)
	sreq.Summarize = true
	got, err := m.Next(context.Background(), sreq)
	text, usage := got.Summary, got.Usage
	if err != nil {
		t.Fatal(err)
	}
	if text != "The task: compute 12 x 7. Done so far: 3 additions." || usage == nil || *usage != (gen.Usage{InputTokens: 900, OutputTokens: 40}) {
		t.Fatalf("summary %q, usage %+v", text, usage)
	}
	turn, sum := s.Requests()[0], s.Requests()[1]
	if sum["tool_choice"] != "none" {
		t.Fatalf("tool_choice = %v, want none", sum["tool_choice"])
	}
	turnMsgs, sumMsgs := messages(t, turn), messages(t, sum)
	if len(sumMsgs) != len(turnMsgs)+1 {
		t.Fatalf("the summary request has %d messages, want Next's %d and the instruction", len(sumMsgs), len(turnMsgs))
	}
	for i := range turnMsgs {
		if a, b := mustJSON(t, turnMsgs[i]), mustJSON(t, sumMsgs[i]); a != b {
			t.Fatalf("message %d differs from Next's:\n%s\n%s", i, a, b)
		}
	}
	last := sumMsgs[len(sumMsgs)-1]
	if last["role"] != "user" || !strings.Contains(last["content"].(string), "Write a summary") {
		t.Fatalf("last message = %v, want the summary instruction", last)
	}
	if mustJSON(t, turn["tools"]) != mustJSON(t, sum["tools"]) {
		t.Fatal("the summary request's tools differ from Next's: the cached prefix is lost")
	}
	// A reply without text is no summary. (text_only.json has text; an
	// empty reply has none.)
	s2 := modeltest.NewServer(t, codec, ok(t, "empty.json"))
	if _, err := newModel(t, s2, nil).Next(context.Background(), sreq); err == nil {
		t.Fatal("a summary request answered by an empty reply succeeded")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
