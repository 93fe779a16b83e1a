package model_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

func TestParseActionValid(t *testing.T) {
	id := "c1"
	tests := []struct {
		name string
		text string
		want agent.Action
	}{
		{"tool call", `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
			agent.Action{ToolCall: &gen.ToolCall{Type: "tool_call", ToolName: "calculator", Arguments: map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}}}},
		{"tool call with id and nested arguments", `{"type":"tool_call","tool_name":"x","call_id":"c1","arguments":{"a":[1,{"b":null}]}}`,
			agent.Action{ToolCall: &gen.ToolCall{Type: "tool_call", ToolName: "x", CallId: &id, Arguments: map[string]any{"a": []any{1.0, map[string]any{"b": nil}}}}}},
		{"finish", `{"type":"finish","answer":"done"}`, agent.Action{Finish: &gen.Finish{Type: "finish", Answer: "done"}}},
		{"surrounding space", " \n{\"type\":\"finish\",\"answer\":\"\"}\n ", agent.Action{Finish: &gen.Finish{Type: "finish", Answer: ""}}},
		{"markdown fence", "```json\n{\"type\":\"finish\",\"answer\":\"ok\"}\n```", agent.Action{Finish: &gen.Finish{Type: "finish", Answer: "ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := model.ParseAction(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Raw = tt.text
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseActionInvalid(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "empty"},
		{"not JSON", "I think the answer is SECRET-42", "invalid JSON at offset 0"},
		{"truncated", `{"type":"finish","answer":"SECRET-42`, "invalid JSON"},
		{"trailing text", `{"type":"finish","answer":"x"} and SECRET-42`, "invalid JSON"},
		{"array", `["SECRET-42"]`, "must be an object"},
		{"missing type", `{"answer":"SECRET-42"}`, `"/type"`},
		{"unknown type", `{"type":"SECRET-42"}`, `"/type": must be one of finish, tool_call`},
		{"missing answer", `{"type":"finish"}`, `"/answer": is required`},
		{"extra field", `{"type":"finish","answer":"SECRET-42","extra":1}`, `"/extra": is not allowed`},
		{"answer wrong type", `{"type":"finish","answer":42}`, `"/answer": must be a string`},
		{"missing arguments", `{"type":"tool_call","tool_name":"calculator"}`, `"/arguments": is required`},
		{"arguments not an object", `{"type":"tool_call","tool_name":"calculator","arguments":"SECRET-42"}`, `"/arguments": must be an object`},
		{"tool name not a string", `{"type":"tool_call","tool_name":7,"arguments":{}}`, `"/tool_name": must be a string`},
		{"empty tool name", `{"type":"tool_call","tool_name":"","arguments":{}}`, `"/tool_name"`},
		{"duplicate key", `{"type":"finish","type":"finish","answer":"x"}`, "duplicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := model.ParseAction(tt.text)
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) {
				t.Fatalf("error %v is not an *agent.InvalidOutputError", err)
			}
			if !strings.Contains(inv.Message, tt.want) {
				t.Fatalf("message %q does not contain %q", inv.Message, tt.want)
			}
			if strings.Contains(inv.Message, "SECRET-42") {
				t.Fatalf("message %q echoes the model's output", inv.Message)
			}
			if len(inv.Message) > 200 {
				t.Fatalf("message is %d bytes; it must be short, not a schema dump", len(inv.Message))
			}
			if inv.Raw != tt.text {
				t.Fatal("Raw must keep the output for opt-in raw recording")
			}
		})
	}
}

// FuzzParseAction: any text is either a valid action (exactly one of tool
// call and finish, with the fields the spec requires) or an invalid-output
// error; never a panic and never another kind of error.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`{"type":"finish","answer":"x"}`, "```json\n{}\n```", `{"type":"tool_call","tool_name":"a","arguments":{},"call_id":"1"}`, "", "{", "[]", "null",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a, err := model.ParseAction(text)
		if err != nil {
			if !agent.IsInvalidOutput(err) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		switch {
		case a.ToolCall != nil && a.Finish == nil:
			if a.ToolCall.ToolName == "" || a.ToolCall.Arguments == nil || a.ToolCall.Type != gen.ToolCallTypeToolCall {
				t.Fatalf("invalid tool call accepted: %+v", a.ToolCall)
			}
		case a.Finish != nil && a.ToolCall == nil:
			if a.Finish.Type != gen.FinishTypeFinish {
				t.Fatalf("invalid finish accepted: %+v", a.Finish)
			}
		default:
			t.Fatalf("action with %v tool call and %v finish", a.ToolCall != nil, a.Finish != nil)
		}
	})
}

// The arguments are the value the tool validates, as schema.Decode reads
// it (-0 is 0), though the action is bound from its text.
func TestParseActionArgumentsAsDecoded(t *testing.T) {
	a, err := model.ParseAction(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":-0,"operation":"add","right":1}}`)
	if err != nil {
		t.Fatal(err)
	}
	if left := a.ToolCall.Arguments["left"].(float64); left != 0 || math.Signbit(left) {
		t.Fatalf("left = %v, want 0", left)
	}
}
