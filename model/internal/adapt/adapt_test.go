package adapt

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
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
			name:  "a call without a result gets a failed one",
			items: []agent.Item{call(nil), call(nil), obs},
			want: []Turn{
				{Kind: Call, ID: "call_0", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "call_0", Name: "calculator", Text: missingResult, IsError: true},
				{Kind: Call, ID: "call_1", Name: "calculator", Arguments: map[string]any{"left": 1.0}},
				{Kind: Result, ID: "call_1", Name: "calculator", Text: "2"},
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

func TestQueue(t *testing.T) {
	a1 := agent.Action{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", CallId: ptr("a")}}
	a2 := agent.Action{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", CallId: ptr("b")}}
	fin := agent.Action{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "x"}}
	obs := agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator"}}
	fb := agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindInvalidModelOutput}}
	tests := []struct {
		name    string
		actions []agent.Action
		after   []agent.Item // appended to the history after the first action
		want    *agent.Action
	}{
		{"executed call releases the next", []agent.Action{a1, a2}, []agent.Item{{ToolCall: a1.ToolCall}, obs}, &a2},
		{"feedback drops the queue", []agent.Action{a1, a2}, []agent.Item{{ToolCall: a1.ToolCall}, fb}, nil},
		{"another call drops the queue", []agent.Action{a1, a2}, []agent.Item{{ToolCall: a2.ToolCall}, obs}, nil},
		{"unexecuted call drops the queue", []agent.Action{a1, a2}, nil, nil},
		{"a finish first queues nothing", []agent.Action{fin, a1}, []agent.Item{{Finish: fin.Finish}, fb}, nil},
		{"a queued finish comes in order", []agent.Action{a1, fin}, []agent.Item{{ToolCall: a1.ToolCall}, obs}, &fin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue
			start := []agent.Item{{Feedback: fb.Feedback}}
			first := q.Start(agent.NewHistory(start...), tt.actions)
			if diff := cmp.Diff(tt.actions[0], first); diff != "" {
				t.Fatalf("first (-want +got):\n%s", diff)
			}
			got, ok := q.Next(agent.NewHistory(append(start, tt.after...)...))
			if (tt.want != nil) != ok {
				t.Fatalf("Next ok = %v, want %v", ok, tt.want != nil)
			}
			if ok {
				if diff := cmp.Diff(*tt.want, got); diff != "" {
					t.Fatalf("next (-want +got):\n%s", diff)
				}
			}
			if q.Len() != 0 && tt.want != nil && tt.want.Finish != nil {
				t.Fatal("the queue must end after a finish")
			}
		})
	}
}

// FuzzActions feeds arbitrary provider output to Actions: it must never
// panic, and must return either valid actions whose Raw parses back to them
// or one invalid-output error.
func FuzzActions(f *testing.F) {
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
		actions, err := ts.Actions(r)
		if err != nil {
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) || inv.Message == "" || inv.Usage == nil {
				t.Fatalf("err = %v, want an invalid-output error with usage", err)
			}
			return
		}
		if len(actions) != 1 || actions[0].Usage == nil {
			t.Fatalf("actions = %+v", actions)
		}
		a := actions[0]
		if (a.ToolCall == nil) == (a.Finish == nil) {
			t.Fatalf("want exactly one of tool call and finish: %+v", a)
		}
		b, err := model.ParseAction(a.Raw)
		if err != nil {
			t.Fatalf("Raw does not parse: %v", err)
		}
		if !cmp.Equal(a.ToolCall, b.ToolCall) || !cmp.Equal(a.Finish, b.Finish) {
			t.Fatalf("Raw parses to another action: %+v vs %+v", a, b)
		}
	})
}
