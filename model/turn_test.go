package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

const (
	turnCall   = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"c1"}`
	turnFinish = `{"type":"finish","answer":"84 <done>"}`
)

func TestParseTurnValid(t *testing.T) {
	id := "c1"
	call := &gen.ToolCall{Type: "tool_call", ToolName: "calculator", CallId: &id, Arguments: map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}}
	fin := &gen.Finish{Type: "finish", Answer: "84 <done>"}
	tests := []struct {
		name string
		text string
		want []agent.Action // Raw is checked separately
	}{
		{"a lone action is a one-action turn", turnCall, []agent.Action{{ToolCall: call}}},
		{"calls then a finish", `{"actions":[` + turnCall + `,` + turnCall + `,` + turnFinish + `]}`, []agent.Action{{ToolCall: call}, {ToolCall: call}, {Finish: fin}}},
		{"fenced", "```json\n{\"actions\":[" + turnFinish + "]}\n```", []agent.Action{{Finish: fin}}},
		{"escaped member name", `{"\u0061ctions":[` + turnFinish + `]}`, []agent.Action{{Finish: fin}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := model.ParseTurn(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got.Actions {
				// Each action's Raw is its own wire form: ParseAction reads
				// the same action back.
				a, err := model.ParseAction(got.Actions[i].Raw)
				if err != nil || !cmp.Equal(a.ToolCall, got.Actions[i].ToolCall) || !cmp.Equal(a.Finish, got.Actions[i].Finish) {
					t.Fatalf("action %d: Raw %q parses to %+v, %v", i, got.Actions[i].Raw, a, err)
				}
				got.Actions[i].Raw = ""
			}
			if diff := cmp.Diff(tt.want, got.Actions); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	// A lone action keeps its text as Raw, exactly as ParseAction.
	got, err := model.ParseTurn(turnCall)
	if err != nil || got.Actions[0].Raw != turnCall {
		t.Fatalf("Raw = %q, %v", got.Actions[0].Raw, err)
	}
}

func TestParseTurnInvalid(t *testing.T) {
	const marker = "do-not-echo-77"
	many := strings.Repeat(turnCall+",", agent.MaxTurnActions) + turnCall
	tests := []struct{ name, text, want string }{
		{"no actions", `{"actions":[]}`, "/actions"},
		{"too many actions", `{"actions":[` + many + `]}`, "/actions"},
		{"finish before a call", `{"actions":[` + turnFinish + `,` + turnCall + `]}`, "/actions/0: a finish may only be the last action of a turn"},
		{"a malformed action", `{"actions":[` + turnCall + `,{"type":"tool_call","tool_name":"` + marker + `"}]}`, "/actions/1"},
		{"an extra member", `{"actions":[` + turnCall + `],"note":"` + marker + `"}`, "note"},
		{"duplicate actions", `{"actions":[` + turnCall + `],"actions":[` + turnFinish + `]}`, "duplicate"},
		{"not JSON", `{"actions":[` + marker, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.ParseTurn(tt.text)
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) || !strings.Contains(inv.Message, tt.want) {
				t.Fatalf("err = %v, want invalid output saying %q", err, tt.want)
			}
			if strings.Contains(inv.Message, marker) {
				t.Fatalf("the message repeats the output: %q", inv.Message)
			}
			if inv.Raw != tt.text {
				t.Fatal("Raw is not the output")
			}
		})
	}
}

// FuzzParseTurn feeds arbitrary text to ParseTurn: it never panics, and
// returns either a turn the loop accepts, each action's Raw parsing back to
// it, or one invalid-output error.
func FuzzParseTurn(f *testing.F) {
	f.Add(turnCall)
	f.Add(`{"actions":[` + turnCall + `,` + turnFinish + `]}`)
	f.Add(`{"actions":[` + turnFinish + `,` + turnCall + `]}`)
	f.Add(`{"actions":[{"type":"tool_call"}]}`)
	f.Add(`{"\u0061ctions":[]}`)
	f.Add("```\n{\"actions\":[" + turnFinish + "]}\n```")
	f.Fuzz(func(t *testing.T, text string) {
		turn, err := model.ParseTurn(text)
		if err != nil {
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) || inv.Message == "" {
				t.Fatalf("err = %v, want an invalid-output error", err)
			}
			return
		}
		n := len(turn.Actions)
		if n == 0 || n > agent.MaxTurnActions {
			t.Fatalf("a turn of %d actions", n)
		}
		for i, a := range turn.Actions {
			if (a.ToolCall == nil) == (a.Finish == nil) || (a.Finish != nil && i != n-1) {
				t.Fatalf("action %d of %d: %+v", i, n, a)
			}
			b, err := model.ParseAction(a.Raw)
			if err != nil || !cmp.Equal(a.ToolCall, b.ToolCall) || !cmp.Equal(a.Finish, b.Finish) {
				t.Fatalf("action %d: Raw parses to %+v, %v", i, b, err)
			}
		}
	})
}
