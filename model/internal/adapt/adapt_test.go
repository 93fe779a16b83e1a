package adapt

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

func toolset(t testing.TB) *Toolset {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := NewToolset(rt.Specs())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func ptr[T any](v T) *T { return &v }

func TestRender(t *testing.T) {
	ts := toolset(t)
	call := func(id *string) agent.Item {
		return agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", CallId: id, Arguments: map[string]any{"left": 1.0}}}
	}
	obs := agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: "2"}}
	obs2 := agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: "no", IsError: true, ErrorCode: ptr(gen.ErrorCodeDivisionByZero)}}
	fin := agent.Item{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "42"}}
	rejected := agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindFinishRejected, Message: "check failed"}}
	summary := agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindHistorySummary, Message: "Earlier: 3 calls."}}
	stuck := agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindStuckWarning, Message: "You are going in circles."}}
	tests := []struct {
		name  string
		items []agent.Item
		want  []Turn
	}{
		{
			name:  "call and result keep the call's id",
			items: []agent.Item{call(ptr("toolu_1")), obs},
			want: []Turn{
				{Kind: Call, ID: "toolu_1", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "toolu_1", Name: "calculator", Text: "2"},
			},
		},
		{
			name:  "an id a provider would reject is replaced",
			items: []agent.Item{call(ptr("has space")), obs},
			want: []Turn{
				{Kind: Call, ID: "call_0", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "call_0", Name: "calculator", Text: "2"},
			},
		},
		{
			name:  "a turn's calls come together, then their results in order",
			items: []agent.Item{call(ptr("a")), call(ptr("b")), obs, obs2},
			want: []Turn{
				{Kind: Call, ID: "a", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Call, ID: "b", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "a", Name: "calculator", Text: "2"},
				{Kind: Result, ID: "b", Name: "calculator", Text: "ERROR (division_by_zero): no", IsError: true},
			},
		},
		{
			name:  "a finish after calls is answered by the rejection",
			items: []agent.Item{call(ptr("a")), fin, obs, rejected},
			want: []Turn{
				{Kind: Call, ID: "a", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Call, ID: "call_1", Name: "finish", Arguments: map[string]any{"answer": "42"}},
				{Kind: Result, ID: "a", Name: "calculator", Text: "2"},
				{Kind: Result, ID: "call_1", Name: "finish", Text: "ERROR: check failed", IsError: true},
			},
		},
		{
			name:  "a call without a result gets a failed one before the next turn",
			items: []agent.Item{call(nil), call(nil), obs, call(nil), obs},
			want: []Turn{
				{Kind: Call, ID: "call_0", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Call, ID: "call_1", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "call_0", Name: "calculator", Text: "2"},
				{Kind: Result, ID: "call_1", Name: "calculator", Text: missingResult, IsError: true},
				{Kind: Call, ID: "call_3", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "call_3", Name: "calculator", Text: "2"},
			},
		},
		{
			name:  "a trailing call gets a failed result",
			items: []agent.Item{call(nil)},
			want: []Turn{
				{Kind: Call, ID: "call_0", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "call_0", Name: "calculator", Text: missingResult, IsError: true},
			},
		},
		{
			name:  "a history summary and a stuck warning are the loop's words, as they are",
			items: []agent.Item{summary, call(ptr("a")), obs, stuck},
			want: []Turn{
				{Kind: User, Text: "Earlier: 3 calls."},
				{Kind: Call, ID: "a", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "a", Name: "calculator", Text: "2"},
				{Kind: User, Text: "You are going in circles."},
			},
		},
		{
			name:  "feedback other than a rejection never answers a waiting call",
			items: []agent.Item{call(ptr("a")), stuck},
			want: []Turn{
				{Kind: Call, ID: "a", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "a", Name: "calculator", Text: missingResult, IsError: true},
				{Kind: User, Text: "You are going in circles."},
			},
		},
		{
			name:  "a person's follow-up is a user message; the finish it follows reached them",
			items: []agent.Item{call(ptr("a")), fin, obs, {UserMessage: &gen.UserMessage{Type: gen.UserMessageTypeUserMessage, Text: "Now add a test."}}},
			want: []Turn{
				{Kind: Call, ID: "a", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Call, ID: "call_1", Name: "finish", Arguments: map[string]any{"answer": "42"}},
				{Kind: Result, ID: "a", Name: "calculator", Text: "2"},
				{Kind: Result, ID: "call_1", Name: "finish", Text: finishDelivered},
				{Kind: User, Text: "Now add a test."},
			},
		},
		{
			name:  "a call left unanswered before a follow-up failed",
			items: []agent.Item{call(ptr("a")), {UserMessage: &gen.UserMessage{Type: gen.UserMessageTypeUserMessage, Text: "Go on."}}},
			want: []Turn{
				{Kind: Call, ID: "a", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "a", Name: "calculator", Text: missingResult, IsError: true},
				{Kind: User, Text: "Go on."},
			},
		},
		{
			name:  "an observation without a call is a user message",
			items: []agent.Item{obs},
			want:  []Turn{{Kind: User, Text: "Result of calculator: 2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ts.Render(agent.NewHistory(tt.items...))); diff != "" {
				t.Fatalf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTurn(t *testing.T) {
	ts := toolset(t)
	usage := &gen.Usage{InputTokens: 3, OutputTokens: 4}
	calc := func(id, args string) ReplyCall { return ReplyCall{ID: id, Name: "calculator", Arguments: args} }
	add := `{"left":1,"operation":"add","right":2}`
	t.Run("parallel calls are one turn, in order, with their ids", func(t *testing.T) {
		turn, err := ts.Turn(Reply{Calls: []ReplyCall{calc("a", add), calc("b", `{"left":2,"operation":"power","right":2}`), {ID: "c", Name: "finish", Arguments: `{"answer":"3"}`}}, Usage: usage})
		if err != nil {
			t.Fatal(err)
		}
		if len(turn.Actions) != 3 || turn.Usage != usage {
			t.Fatalf("turn = %+v", turn)
		}
		// An argument the tool's schema refuses ("power") is the runtime's
		// to reject, for that call alone: the turn is valid output.
		for i, id := range []string{"a", "b"} {
			if c := turn.Actions[i].ToolCall; c == nil || c.CallId == nil || *c.CallId != id {
				t.Fatalf("action %d = %+v, want the call %s", i, turn.Actions[i], id)
			}
		}
		if f := turn.Actions[2].Finish; f == nil || f.Answer != "3" {
			t.Fatalf("last action = %+v, want the finish", turn.Actions[2])
		}
	})
	invalid := []struct {
		name  string
		calls []ReplyCall
		want  string
	}{
		{"arguments that are not JSON spoil the whole turn", []ReplyCall{calc("a", add), calc("b", `{"left":`)}, "tool call 2 (calculator)"},
		{"an unknown tool spoils the whole turn", []ReplyCall{calc("a", add), {ID: "b", Name: "nope", Arguments: `{}`}}, "tool call 2 names a tool that does not exist"},
		{"a finish must come last", []ReplyCall{{ID: "a", Name: "finish", Arguments: `{"answer":"3"}`}, calc("b", add)}, "call finish last"},
		{"a turn holds at most MaxTurnActions calls", slices.Repeat([]ReplyCall{calc("a", add)}, agent.MaxTurnActions+1), "more than the 64"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ts.Turn(Reply{Calls: tt.calls, Usage: usage})
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) || !strings.Contains(inv.Message, tt.want) || inv.Usage != usage || inv.Text != "" {
				t.Fatalf("err = %v, want invalid output saying %q, with the usage and no message text", err, tt.want)
			}
		})
	}
	// Text and no call is what a follow-up run takes for the model's
	// message to the person: the error carries the text.
	t.Run("text only carries the text", func(t *testing.T) {
		_, err := ts.Turn(Reply{Text: "All done.", Usage: usage})
		var inv *agent.InvalidOutputError
		if !errors.As(err, &inv) || inv.Text != "All done." {
			t.Fatalf("err = %#v, want invalid output with Text", err)
		}
	})
}

func FuzzTurn(f *testing.F) {
	f.Add("calculator", `{"left":1,"operation":"add","right":2}`, "", "call_1")
	f.Add("finish", `{"answer":"done"}`, "", "")
	f.Add("finish", `{"answer":1}`, "", "")
	f.Add("", "", "just text", "")
	f.Add("calculator", `{"left":`, "", "x")
	f.Add("nope", `[]`, "", "")
	f.Add("calculator", `{"a":{"b":[1,2,{"c":null}]}}`, "text too", "id with space")
	ts := toolset(f)
	f.Fuzz(func(t *testing.T, name, args, text, id string) {
		r := Reply{Text: text, Usage: &gen.Usage{InputTokens: 1}}
		if name != "" {
			r.Calls = []ReplyCall{{ID: id, Name: name, Arguments: args}}
		}
		turn, err := ts.Turn(r)
		if err != nil {
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) || inv.Message == "" || inv.Usage == nil {
				t.Fatalf("err = %v, want an invalid-output error with usage", err)
			}
			return
		}
		if len(turn.Actions) != 1 || turn.Usage == nil {
			t.Fatalf("turn = %+v", turn)
		}
		a := turn.Actions[0]
		if (a.ToolCall == nil) == (a.Finish == nil) {
			t.Fatalf("want exactly one of tool call and finish: %+v", a)
		}
		b, err := ParseAction(a.Raw)
		if err != nil {
			t.Fatalf("Raw does not parse: %v", err)
		}
		// The model's text is the adapter's, beside the action: not in Raw.
		if a.ToolCall != nil {
			c := *a.ToolCall
			c.Text = nil
			a.ToolCall = &c
		}
		if a.Finish != nil {
			f := *a.Finish
			f.Text = nil
			a.Finish = &f
		}
		if !cmp.Equal(a.ToolCall, b.ToolCall) || !cmp.Equal(a.Finish, b.Finish) {
			t.Fatalf("Raw parses to another action: %+v vs %+v", a, b)
		}
	})
}
