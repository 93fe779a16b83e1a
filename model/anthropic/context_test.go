package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/modeltest"
)

// TestSummarize: on the wire (the rest is modeltest's Summarize), the
// instruction joins the last user message, tool_choice is none, and the
// usage counts cache reads.
func TestSummarize(t *testing.T) {
	t.Parallel()
	summary := `{"id":"msg_S","type":"message","role":"assistant","model":"claude-sonnet-4-5",
"content":[{"type":"text","text":"The task: compute 12 x 7. Done: 3 additions."}],"stop_reason":"end_turn","stop_sequence":null,
"usage":{"input_tokens":100,"cache_read_input_tokens":800,"output_tokens":30}}`
	s := modeltest.NewServer(t, codec, ok(t, "finish_tool.json"), modeltest.OK([]byte(summary)))
	m := newModel(t, s, nil)
	req := modeltest.Request(t, modeltest.LongHistory(3, 50))
	if _, err := m.Next(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Summarize = true
	got, err := m.Next(context.Background(), req)
	if err != nil || got.Usage == nil || *got.Usage != (gen.Usage{InputTokens: 900, OutputTokens: 30}) {
		t.Fatalf("summary turn %+v, %v; want 900 input tokens, cache reads counted", got, err)
	}
	turn, sum := s.Requests()[0], s.Requests()[1]
	if diff := cmp.Diff(map[string]any{"type": "none"}, sum["tool_choice"]); diff != "" {
		t.Fatalf("tool_choice (-want +got):\n%s", diff)
	}
	// The history ends with a user message of tool results: the
	// instruction joins it, as the API wants alternating roles.
	tm, sm := messages(t, turn), messages(t, sum)
	if len(sm) != len(tm) || roles(sm) != roles(tm)[:len(roles(tm))-1]+",text]" {
		t.Fatalf("summary request = %s, Next's = %s", roles(sm), roles(tm))
	}
	blocks := sm[len(sm)-1]["content"].([]any)
	if last := blocks[len(blocks)-1].(map[string]any); last["text"] != modeltest.SummaryInstruction {
		t.Fatalf("last block = %v, want the instruction", last)
	}
}

// TestPrefixCached: cache_control (ephemeral) marks the end of the system
// prompt and of the tools, so the prefix, byte-identical in every request
// (TestContext), is read from the prompt cache.
func TestPrefixCached(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "finish_tool.json"))
	if _, err := newModel(t, s, nil).Next(context.Background(), modeltest.Request(t, agent.NewHistory())); err != nil {
		t.Fatal(err)
	}
	var req struct {
		System []map[string]any `json:"system"`
		Tools  []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(s.Bodies()[0], &req); err != nil {
		t.Fatal(err)
	}
	ephemeral := map[string]any{"type": "ephemeral"}
	if !cmp.Equal(req.System[len(req.System)-1]["cache_control"], ephemeral) || !cmp.Equal(req.Tools[len(req.Tools)-1]["cache_control"], ephemeral) {
		t.Fatal("the last system block and the last tool are not marked for caching")
	}
	for _, tool := range req.Tools[:len(req.Tools)-1] {
		if tool["cache_control"] != nil {
			t.Fatalf("tool %v is marked too: only the end of the prefix is", tool["name"])
		}
	}
}

// TestThinkingPassedBack: thinking and redacted_thinking blocks come back
// in the next request unchanged, first in the assistant message of the
// tool_use they came with, as the API requires with extended thinking;
// they never reach the trace.
func TestThinkingPassedBack(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "thinking_tool_use.json"), ok(t, "finish_tool.json"))
	res, events, err := modeltest.RunTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v, %v", res, err)
	}
	var reply struct{ Content []map[string]any }
	if err := json.Unmarshal(modeltest.Testdata(t, "thinking_tool_use.json"), &reply); err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, s.Requests()[1])
	if got := roles(msgs); got != "user[text] assistant[thinking,redacted_thinking,tool_use] user[tool_result]" {
		t.Fatalf("second request = %s", got)
	}
	sent := msgs[1]["content"].([]any)
	for i, want := range reply.Content {
		if diff := cmp.Diff(want, sent[i]); diff != "" {
			t.Fatalf("block %d differs from the one received (-received +sent):\n%s", i, diff)
		}
	}
	var trace bytes.Buffer
	for _, ev := range events {
		data, _ := json.Marshal(ev)
		trace.Write(data)
	}
	for _, secret := range []string{"I should use the calculator", "EqQBCgIYAhIM", "EmwKAhgBEgy3"} {
		if bytes.Contains(trace.Bytes(), []byte(secret)) {
			t.Fatalf("the trace holds reasoning (%q), even with raw recording", secret)
		}
	}
}
