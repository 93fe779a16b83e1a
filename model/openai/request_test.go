package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

func TestRequestSettings(t *testing.T) {
	temp := 0.7
	tests := []struct {
		name string
		cfg  Config
		want map[string]any // the settings fields of the body
	}{
		{"OpenAI: max_completion_tokens", Config{Model: "gpt-4o-mini", APIKey: "k", MaxOutputTokens: 500, Temperature: &temp},
			map[string]any{"model": "gpt-4o-mini", "max_completion_tokens": 500.0, "temperature": 0.7, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{"other servers: max_tokens", Config{Model: "llama3.1", BaseURL: "http://localhost:11434/v1", MaxOutputTokens: 500},
			map[string]any{"model": "llama3.1", "max_tokens": 500.0, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{"provider defaults", Config{Model: "llama3.1", BaseURL: "http://localhost:11434/v1"},
			map[string]any{"model": "llama3.1", "stream": true, "stream_options": map[string]any{"include_usage": true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			body, err := encode(m, &agent.Request{Task: gen.Task{Prompt: "p"}})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("the body is not JSON: %v\n%s", err, body)
			}
			delete(got, "messages")
			delete(got, "tools")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzRequest checks that any task, observation and arguments make a valid
// body that carries them unchanged.
func FuzzRequest(f *testing.F) {
	f.Add("Compute 12 x 7", "84", `{"left":12}`, false)
	f.Add("quote \" and \\ and \n", "\x00\x1f\u2028 <tag>", `{"a":[1,2,{"b":null}]}`, true)
	m, err := New(Config{Model: "gpt-4o-mini", APIKey: "k"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, prompt, content, args string, isError bool) {
		var a map[string]any
		if json.Unmarshal([]byte(args), &a) != nil {
			a = map[string]any{"raw": args}
		}
		h := agent.NewHistory(
			agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: a}},
			agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: content, IsError: isError}},
		)
		body, err := encode(m, &agent.Request{Task: gen.Task{Prompt: prompt}, History: h})
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			Messages []struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("invalid body: %v\n%s", err, body)
		}
		if len(req.Messages) != 4 {
			t.Fatalf("%d messages", len(req.Messages))
		}
		var want, got any
		data, _ := json.Marshal(a)
		_ = json.Unmarshal(data, &want)
		if err := json.Unmarshal([]byte(req.Messages[2].ToolCalls[0].Function.Arguments), &got); err != nil {
			t.Fatalf("arguments are not JSON: %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("arguments (-want +got):\n%s", diff)
		}
		roundTrip := func(s string) string {
			data, _ := json.Marshal(s)
			var out string
			_ = json.Unmarshal(data, &out)
			return out
		}
		if req.Messages[1].Content != roundTrip(prompt) {
			t.Fatalf("prompt %q came back as %q", prompt, req.Messages[1].Content)
		}
		if !isError && req.Messages[3].Content != roundTrip(content) {
			t.Fatalf("content %q came back as %q", content, req.Messages[3].Content)
		}
	})
}

// encode is the body Next sends for req.
func encode(m *Model, req *agent.Request) ([]byte, error) {
	_, body, err := m.Request(req)
	return body, err
}

// The task's instructions (the project's AGENTS.md) reach the model as a
// user message of their own between the system prompt and the task.
func TestInstructionsComeBeforeTheTask(t *testing.T) {
	m, err := New(Config{Model: "gpt-4o-mini", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	in := "# Instructions from AGENTS.md\n\nRun go vet before you finish."
	body, err := encode(m, &agent.Request{Task: gen.Task{Prompt: "fix the test", Instructions: &in}})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var got [][2]string
	for _, msg := range req.Messages[1:] {
		got = append(got, [2]string{msg.Role, msg.Content})
	}
	if want := [][2]string{{"user", in}, {"user", "fix the test"}}; !cmp.Equal(got, want) || req.Messages[0].Role != "system" {
		t.Fatalf("messages after the system prompt %q, want %q", got, want)
	}
}
