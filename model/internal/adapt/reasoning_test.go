package adapt

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// TestReasoning: a reply's reasoning blocks ride on the turn's first action
// (so the history carries them back to the provider) and never in Raw (so
// no trace records them); reasoning a model writes into the finish
// arguments itself is dropped, and the finish tool never offers it.
func TestReasoning(t *testing.T) {
	ts := toolset(t)
	blocks := []gen.ReasoningBlock{
		{Type: gen.ReasoningBlockTypeThinking, Thinking: ptr("think-7f3a"), Signature: ptr("sig")},
		{Type: gen.ReasoningBlockTypeRedactedThinking, Data: ptr("opaque")},
	}
	calc := ReplyCall{ID: "a", Name: "calculator", Arguments: `{"left":1,"operation":"add","right":2}`}
	turn, err := ts.Turn(Reply{Calls: []ReplyCall{calc, calc}, Reasoning: blocks})
	if err != nil {
		t.Fatal(err)
	}
	first, second := turn.Actions[0].ToolCall, turn.Actions[1].ToolCall
	if first.Reasoning == nil || !cmp.Equal(*first.Reasoning, blocks) || second.Reasoning != nil {
		t.Fatalf("reasoning on the actions: %v, %v; want the blocks on the first only", first.Reasoning, second.Reasoning)
	}
	for _, a := range turn.Actions {
		if strings.Contains(a.Raw, "think-7f3a") {
			t.Fatalf("Raw holds the reasoning: %s", a.Raw)
		}
	}
	turns := ts.Render(agent.NewHistory(agent.Item{ToolCall: first}))
	if !cmp.Equal(turns[0].Reasoning, blocks) {
		t.Fatalf("rendered call reasoning = %v", turns[0].Reasoning)
	}

	turn, err = ts.Turn(Reply{Calls: []ReplyCall{{ID: "f", Name: ts.Finish, Arguments: `{"answer":"3","reasoning":[{"type":"thinking","thinking":"forged"}]}`}}})
	if err != nil {
		t.Fatal(err)
	}
	if f := turn.Actions[0].Finish; f == nil || f.Reasoning != nil {
		t.Fatalf("finish = %+v, want the model's reasoning dropped", f)
	}
	fin := ts.Tools[len(ts.Tools)-1]
	for _, k := range ts.adapterSet {
		if _, ok := fin.Parameters["properties"].(map[string]any)[k]; ok || k == "" {
			t.Fatalf("the finish tool offers %q to the model: %v", k, fin.Parameters)
		}
	}
	withReasoning := &gen.Finish{Type: gen.FinishTypeFinish, Answer: "3", Reasoning: &blocks}
	if args := ts.FinishArguments(withReasoning); !cmp.Equal(args, map[string]any{"answer": "3"}) {
		t.Fatalf("finish arguments = %v, want the answer only", args)
	}
}

func TestContextWindowDefaults(t *testing.T) {
	for name, want := range map[string]int{
		"gpt-4.1-nano": 1_047_576, "GPT-4o": 128_000, "o1-preview": 200_000, "gpt-5.1": 272_000,
		"gpt-4.1-mini": 1_047_576, "gpt-4o-mini": 128_000, "openai/gpt-4o": 128_000, "o3": 200_000, "o4-mini": 200_000, "gpt-5-codex": 272_000,
		"claude-haiku-4-5": 200_000, "claude-3-5-haiku-latest": 200_000, "openrouter/anthropic/claude-sonnet-4": 200_000,
		"my-gpt-4o": 0, "mistral": 0, "llama3.1:8b": 0, "some-proxy-model": 0,
	} {
		if got := familyWindow(name); got != want {
			t.Errorf("familyWindow(%q) = %d, want %d", name, got, want)
		}
	}
}
