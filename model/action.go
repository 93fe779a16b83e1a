// Package model holds the models specloop ships and the adapter that turns a
// model's raw text into an Action.
//
// ParseAction is the JSON adapter: it validates text against the spec's
// Action schema, so anything a model writes is either a valid action or one
// short invalid-output error. Script replays a list of raw responses through
// it, for tests, demos and remote runs; Replay re-runs a recorded trace.
// Real providers live in model/openai and model/anthropic.
package model

import (
	"fmt"
	"strings"
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/spec"
)

var actionValidator = sync.OnceValues(func() (*schema.Validator, error) {
	doc, err := spec.Load()
	if err != nil {
		return nil, err
	}
	ref, ok := doc.Components.Schemas["Action"]
	if !ok {
		return nil, fmt.Errorf("spec has no Action schema")
	}
	return schema.Compile(ref.Value)
})

// ParseAction turns a model's raw text into an Action. The text must be one
// JSON object in the spec's Action form, optionally inside a single Markdown
// code fence. Anything else is an *agent.InvalidOutputError whose message
// says what is wrong and where (a JSON pointer), without repeating the text.
func ParseAction(text string) (agent.Action, error) {
	v, err := actionValidator()
	if err != nil {
		return agent.Action{}, err
	}
	body := unfence(text)
	if strings.TrimSpace(body) == "" {
		return agent.Action{}, invalid("the output is empty; expected one JSON action object", text)
	}
	value, err := schema.Decode([]byte(body))
	if err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	if err := v.Validate(value); err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	obj := value.(map[string]any)
	switch gen.ActionType(obj["type"].(string)) {
	case gen.ActionTypeToolCall:
		call := &gen.ToolCall{
			Type:      gen.ToolCallTypeToolCall,
			ToolName:  obj["tool_name"].(string),
			Arguments: obj["arguments"].(map[string]any),
		}
		if id, ok := obj["call_id"].(string); ok {
			call.CallId = &id
		}
		return agent.Action{ToolCall: call, Raw: text}, nil
	default:
		return agent.Action{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: obj["answer"].(string)}, Raw: text}, nil
	}
}

func invalid(msg, raw string) error {
	return &agent.InvalidOutputError{Message: msg, Raw: raw}
}

// unfence strips one Markdown code fence (```json ... ```) around the whole
// text, which chat models often add.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return text
	}
	t = strings.TrimSuffix(t[3:], "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 && !strings.ContainsAny(t[:nl], "{[\"") {
		t = t[nl+1:] // the info string, e.g. "json"
	}
	return t
}
