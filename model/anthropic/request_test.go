package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

func TestRequestSettings(t *testing.T) {
	temp := 0.3
	tests := []struct {
		name string
		cfg  Config
		want map[string]any
	}{
		{"defaults", Config{Model: "claude-sonnet-4-5", APIKey: "k"}, map[string]any{"model": "claude-sonnet-4-5", "max_tokens": float64(DefaultMaxOutputTokens), "stream": true}},
		{"set", Config{Model: "claude-sonnet-4-5", APIKey: "k", MaxOutputTokens: 300, Temperature: &temp}, map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 300.0, "temperature": 0.3, "stream": true}},
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
			for _, k := range []string{"messages", "tools", "system"} {
				delete(got, k)
			}
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
	m, err := New(Config{Model: "claude-sonnet-4-5", APIKey: "k"})
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
				Content []map[string]any `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("invalid body: %v\n%s", err, body)
		}
		if len(req.Messages) != 3 {
			t.Fatalf("%d messages", len(req.Messages))
		}
		var want any
		data, _ := json.Marshal(a)
		_ = json.Unmarshal(data, &want)
		if diff := cmp.Diff(want, req.Messages[1].Content[0]["input"]); diff != "" {
			t.Fatalf("input (-want +got):\n%s", diff)
		}
		wantPrompt, _ := json.Marshal(prompt)
		var p string
		_ = json.Unmarshal(wantPrompt, &p)
		if req.Messages[0].Content[0]["text"] != p {
			t.Fatalf("prompt %q came back as %q", p, req.Messages[0].Content[0]["text"])
		}
	})
}

// encode is the body Next sends for req.
func encode(m *Model, req *agent.Request) ([]byte, error) {
	_, body, err := m.Request(req)
	return body, err
}

// The task's instructions (the project's AGENTS.md) reach the model as the
// first text block of the first user message, before the task.
func TestInstructionsComeBeforeTheTask(t *testing.T) {
	m, err := New(Config{Model: "claude-sonnet-4-5", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	in := "# Instructions from AGENTS.md\n\nRun go vet before you finish."
	body, err := encode(m, &agent.Request{Task: gen.Task{Prompt: "fix the test", Instructions: &in}})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Role    string
			Content []struct{ Type, Text string }
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 1 || req.Messages[0].Role != "user" {
		t.Fatalf("messages %+v, want one user message", req.Messages)
	}
	var got []string
	for _, b := range req.Messages[0].Content {
		got = append(got, b.Type+":"+b.Text)
	}
	if want := []string{"text:" + in, "text:fix the test"}; !cmp.Equal(got, want) {
		t.Fatalf("content %q, want %q", got, want)
	}
}
