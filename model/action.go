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

// actionSchema is the spec's Action schema, compiled, and the name of its
// discriminator property.
type actionSchema struct {
	validator     *schema.Validator
	discriminator string
}

var loadActionSchema = sync.OnceValues(func() (*actionSchema, error) {
	doc, err := spec.Load()
	if err != nil {
		return nil, err
	}
	ref, ok := doc.Components.Schemas["Action"]
	if !ok || ref.Value == nil {
		return nil, fmt.Errorf("spec has no Action schema")
	}
	if ref.Value.Discriminator == nil {
		return nil, fmt.Errorf("spec: Action has no discriminator")
	}
	v, err := schema.Compile(ref.Value)
	if err != nil {
		return nil, err
	}
	return &actionSchema{validator: v, discriminator: ref.Value.Discriminator.PropertyName}, nil
})

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
	// The action object is read once, here, so it is decoded as a list of
	// members (whose memory is recycled), not as a map; what the Action
	// keeps, such as the arguments, has maps of its own.
	buf := memberBufs.Get().(*schema.Members)
	obj, value, err := schema.DecodeMembers(body, *buf)
	defer releaseMembers(buf, obj)
	if obj != nil {
		err = as.validator.ValidateMembers(obj)
	} else if err == nil {
		err = as.validator.Validate(value) // not an object: says so
	}
	if err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	typ, _ := obj.Get(as.discriminator)
	if gen.ActionType(typ.(string)) == gen.ActionTypeToolCall {
		call := &gen.ToolCall{}
		if err := schema.BindMembers(obj, call); err != nil {
			return agent.Action{}, fmt.Errorf("bind a valid tool call: %w", err)
		}
		return agent.Action{ToolCall: call, Raw: text}, nil
	}
	fin := &gen.Finish{}
	if err := schema.BindMembers(obj, fin); err != nil {
		return agent.Action{}, fmt.Errorf("bind a valid finish: %w", err)
	}
	return agent.Action{Finish: fin, Raw: text}, nil
}

// memberBufs recycles the member lists of decoded action objects.
var memberBufs = sync.Pool{New: func() any { return new(schema.Members) }}

// releaseMembers returns the memory of obj, decoded into buf, to the pool,
// without the references to its values, unless it is large (an action has
// only a few members; anything else is invalid).
func releaseMembers(buf *schema.Members, obj schema.Members) {
	if obj != nil {
		*buf = obj // it may have outgrown buf
	}
	if cap(*buf) > 16 {
		*buf = nil
	}
	clear((*buf)[:cap(*buf)])
	memberBufs.Put(buf)
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
