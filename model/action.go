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

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/specdoc"
)

// actionSchema is the spec's Action schema, compiled, and the name of its
// discriminator property.
type actionSchema struct {
	validator     *schema.Validator
	discriminator string
}

var loadActionSchema = sync.OnceValues(func() (*actionSchema, error) {
	s, v, err := compileComponent("Action")
	if err != nil {
		return nil, err
	}
	if s.Discriminator == nil {
		return nil, fmt.Errorf("spec: Action has no discriminator")
	}
	return &actionSchema{validator: v, discriminator: s.Discriminator.PropertyName}, nil
})

// compileComponent returns the spec's schema component name and its
// validator. Model output is neither a request nor a response, so readOnly
// and writeOnly do not apply (schema.Neither).
func compileComponent(name string) (*openapi3.Schema, *schema.Validator, error) {
	doc, err := specdoc.Load()
	if err != nil {
		return nil, nil, err
	}
	ref, ok := doc.Components.Schemas[name]
	if !ok || ref.Value == nil {
		return nil, nil, fmt.Errorf("spec has no %s schema", name)
	}
	v, err := schema.CompileFor(ref.Value, schema.Neither)
	if err != nil {
		return nil, nil, err
	}
	return ref.Value, v, nil
}

// ParseAction turns a model's raw text into an Action. The text must be one
// JSON object in the spec's Action form, optionally inside a single Markdown
// code fence. Anything else is an *agent.InvalidOutputError whose message
// says what is wrong and where (a JSON pointer), without repeating the text.
func ParseAction(text string) (agent.Action, error) {
	as, err := loadActionSchema()
	if err != nil {
		return agent.Action{}, err
	}
	body := unfence(text)
	if strings.TrimSpace(body) == "" {
		return agent.Action{}, invalid("the output is empty; expected one JSON action object", text)
	}
	value, err := schema.Decode([]byte(body))
	if err == nil {
		err = as.validator.Validate(value)
	}
	if err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	obj := value.(map[string]any) // the schema says it is an object
	if gen.ActionType(obj[as.discriminator].(string)) == gen.ActionTypeToolCall {
		call := &gen.ToolCall{}
		if err := schema.Bind(obj, call); err != nil {
			return agent.Action{}, invalid(err.Error(), text)
		}
		return agent.Action{ToolCall: call, Raw: text}, nil
	}
	fin := &gen.Finish{}
	if err := schema.Bind(obj, fin); err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	return agent.Action{Finish: fin, Raw: text}, nil
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
