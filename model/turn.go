package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// turnSchema is the spec's Turn schema, compiled, and the name of its one
// property, the list of actions.
type turnSchema struct {
	validator *schema.Validator
	actions   string
}

var loadTurnSchema = sync.OnceValues(func() (*turnSchema, error) {
	s, v, err := compileComponent("Turn")
	if err != nil {
		return nil, err
	}
	if len(s.Required) != 1 {
		return nil, fmt.Errorf("spec: Turn must have one required property")
	}
	return &turnSchema{validator: v, actions: s.Required[0]}, nil
})

// ParseTurn turns a model's raw text into a Turn: either one JSON object in
// the spec's Action form (a one-action turn, exactly as ParseAction reads
// it) or one in the spec's Turn form, {"actions": [...]}, optionally inside
// a single Markdown code fence. Each action of a Turn gets its own wire
// form as Raw. Anything else — a finish that is not the turn's last
// action included — is an *agent.InvalidOutputError whose message says
// what is wrong and where (a JSON pointer), without repeating the text.
func ParseTurn(text string) (agent.Turn, error) {
	ts, err := loadTurnSchema()
	if err != nil {
		return agent.Turn{}, err
	}
	body := unfence(text)
	if !strings.Contains(body, ts.actions) && !strings.Contains(body, `\u`) {
		// No member can be named actions: not a Turn. (The common case,
		// which this spares a second decoding.)
		return oneAction(text)
	}
	value, err := schema.Decode([]byte(body))
	obj, isObject := value.(map[string]any)
	if _, isTurn := obj[ts.actions]; err != nil || !isObject || !isTurn {
		return oneAction(text)
	}
	if err := ts.validator.Validate(value); err != nil {
		return agent.Turn{}, invalid(err.Error(), text)
	}
	as, err := loadActionSchema()
	if err != nil {
		return agent.Turn{}, err
	}
	items := obj[ts.actions].([]any) // the schema says it is an array of actions
	turn := agent.Turn{Actions: make([]agent.Action, len(items))}
	for i, item := range items {
		m := item.(map[string]any)
		a := &turn.Actions[i]
		if gen.ActionType(m[as.discriminator].(string)) == gen.ActionTypeToolCall {
			a.ToolCall = &gen.ToolCall{}
			err = schema.Bind(m, a.ToolCall)
		} else {
			if i != len(items)-1 {
				return agent.Turn{}, invalid(fmt.Sprintf("/%s/%d: a finish may only be the last action of a turn", ts.actions, i), text)
			}
			a.Finish = &gen.Finish{}
			err = schema.Bind(m, a.Finish)
		}
		if err != nil {
			return agent.Turn{}, invalid(fmt.Sprintf("/%s/%d: %v", ts.actions, i, err), text)
		}
		// Each action's Raw is its own wire form, as a replay reads it.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			return agent.Turn{}, fmt.Errorf("encode a valid action: %w", err)
		}
		a.Raw = strings.TrimSuffix(buf.String(), "\n")
	}
	return turn, nil
}

// oneAction parses text that is not a Turn: an Action, or ParseAction says
// what is wrong.
func oneAction(text string) (agent.Turn, error) {
	a, err := ParseAction(text)
	if err != nil {
		return agent.Turn{}, err
	}
	return agent.Turn{Actions: []agent.Action{a}}, nil
}
