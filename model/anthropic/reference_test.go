package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/internal/adapt"
	"github.com/specloop/specloop/model/modeltest"
)

// systemPlaceholder stands for the adapter's system prompt in the reference
// fixture; the test puts the prompt in (its wording is the adapter's own,
// not the API's).
const systemPlaceholder = "<the adapter's system prompt>"

// TestRequestMatchesReference compares the body the adapter sends, field by
// field and value by value, with testdata/request_reference.json: a
// Messages request written by hand from Anthropic's API reference (system
// text blocks, custom tools with input_schema, tool_use blocks answered by
// tool_result blocks with is_error, max_tokens, temperature) for the same
// task, tools and history. An empty result has no content: the API refuses
// empty text blocks.
func TestRequestMatchesReference(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "finish_tool.json"))
	weather := []gen.ToolSpec{{
		Name:        "get_weather",
		Description: "Get the current weather in a given location",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"location": map[string]any{"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
				"unit":     map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}, "description": "The unit of temperature, either 'celsius' or 'fahrenheit'"},
			},
			"required": []any{"location"},
		},
	}}
	temp := 0.2
	m := newModel(t, s, func(c *anthropic.Config) {
		c.Temperature = &temp
		c.MaxOutputTokens = 1024
	})
	sf, paris, tokyo := "toolu_01A09q90qw90lq917835lq9", "toolu_02B19r91rx91mr928946mr0", "toolu_03C29s92sy92ns939057ns1"
	code := gen.ErrorCodeInvalidArguments
	call := func(id *string, args map[string]any) agent.Item {
		return agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "get_weather", CallId: id, Arguments: args}}
	}
	result := func(id *string, obs gen.Observation) agent.Item {
		obs.Type, obs.ToolName, obs.CallId = gen.ObservationTypeObservation, "get_weather", id
		return agent.Item{Observation: &obs}
	}
	history := agent.NewHistory(
		call(&sf, map[string]any{"location": "San Francisco, CA"}),
		result(&sf, gen.Observation{Content: "15 degrees"}),
		call(&paris, map[string]any{"location": "Paris, France", "unit": "kelvin"}),
		result(&paris, gen.Observation{IsError: true, ErrorCode: &code, Content: "unit must be celsius or fahrenheit"}),
		call(&tokyo, map[string]any{"location": "Tokyo, Japan"}),
		result(&tokyo, gen.Observation{Content: ""}),
	)
	task := gen.Task{Prompt: "What's the weather like in San Francisco, in Paris and in Tokyo?"}
	if _, err := m.Next(context.Background(), &agent.Request{Task: task, History: history, Tools: weather}); err != nil {
		t.Fatal(err)
	}

	var want map[string]any
	if err := json.Unmarshal(modeltest.Testdata(t, "request_reference.json"), &want); err != nil {
		t.Fatal(err)
	}
	got := s.Requests()[0]
	system := want["system"].([]any)[0].(map[string]any)
	if system["text"] != systemPlaceholder {
		t.Fatalf("the fixture's system block is not the placeholder: %v", system)
	}
	system["text"] = adapt.SystemPrompt("")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("request (-reference +sent):\n%s", diff)
	}
}
