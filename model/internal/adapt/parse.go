package adapt

import (
	"fmt"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// actionSchemas are the spec's Action and Turn schemas, compiled, and the
// names of the Action's discriminator property and of the Turn's one
// property, the list of actions.
type actionSchemas struct {
	action, turn           *schema.Validator
	discriminator, actions string
}

// loadSchemas compiles the schemas once. Model output is neither a
// request nor a response, so readOnly and writeOnly do not apply
// (schema.Neither).
var loadSchemas = sync.OnceValues(func() (*actionSchemas, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, err
	}
	action, turn := doc.Schemas["Action"], doc.Schemas["Turn"]
	as := &actionSchemas{discriminator: discriminator(action)}
	if required, _ := turn["required"].([]any); len(required) == 1 {
		as.actions, _ = required[0].(string)
	}
	if as.discriminator == "" || as.actions == "" {
		return nil, fmt.Errorf("spec: no Action schema with a discriminator, or no Turn schema with one required property")
	}
	if as.action, err = schema.Compile(action, schema.Neither); err != nil {
		return nil, err
	}
	if as.turn, err = schema.Compile(turn, schema.Neither); err != nil {
		return nil, err
	}
	return as, nil
})

// discriminator is the property name of a schema's OpenAPI discriminator,
// or "".
func discriminator(s map[string]any) string {
	d, _ := s["discriminator"].(map[string]any)
	name, _ := d["propertyName"].(string)
	return name
}

// ParseAction is model.ParseAction, the JSON adapter.
func ParseAction(text string) (agent.Action, error) {
	as, err := loadSchemas()
	if err != nil {
		return agent.Action{}, err
	}
	body := unfence(text)
	if strings.TrimSpace(body) == "" {
		return agent.Action{}, invalid("the output is empty; expected one JSON action object", text)
	}
	data := []byte(body)
	value, err := schema.Decode(data)
	if err == nil {
		err = as.action.Validate(value)
	}
	if err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	a, err := as.bind(data, value.(map[string]any)) // the schema says it is an object
	if err != nil {
		return agent.Action{}, invalid(err.Error(), text)
	}
	a.Raw = text
	return a, nil
}

// bind stores a valid action, obj as Decode read it from text, in a
// ToolCall or a Finish. It decodes text into the generated type rather
// than encode obj for schema.Bind (the text is strict JSON, and neither
// type has an integer a number written as 1e2 would have to fit); the
// arguments are obj's, as Decode normalized them and the tool validates
// them.
func (as *actionSchemas) bind(text []byte, obj map[string]any) (agent.Action, error) {
	if gen.ActionType(obj[as.discriminator].(string)) != gen.ActionTypeToolCall {
		fin := &gen.Finish{}
		return agent.Action{Finish: fin}, schema.Unmarshal(text, fin)
	}
	// The arguments, decoded already, are not decoded again: the outer
	// field takes them as text, which is dropped.
	var call struct {
		gen.ToolCall
		Arguments jsontext.Value `json:"arguments"`
	}
	if err := schema.Unmarshal(text, &call); err != nil {
		return agent.Action{}, err
	}
	call.ToolCall.Arguments = obj["arguments"].(map[string]any)
	return agent.Action{ToolCall: &call.ToolCall}, nil
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

// ParseTurn is model.ParseTurn: an Action, or a Turn of several.
func ParseTurn(text string) (agent.Turn, error) {
	as, err := loadSchemas()
	if err != nil {
		return agent.Turn{}, err
	}
	body := unfence(text)
	if !strings.Contains(body, as.actions) && !strings.Contains(body, `\u`) {
		// No member can be named actions: not a Turn. (The common case,
		// which this spares a second decoding.)
		return oneAction(text)
	}
	value, err := schema.Decode([]byte(body))
	obj, isObject := value.(map[string]any)
	if _, isTurn := obj[as.actions]; err != nil || !isObject || !isTurn {
		return oneAction(text)
	}
	if err := as.turn.Validate(value); err != nil {
		return agent.Turn{}, invalid(err.Error(), text)
	}
	items := obj[as.actions].([]any) // the schema says it is an array of actions
	turn := agent.Turn{Actions: make([]agent.Action, len(items))}
	for i, item := range items {
		m := item.(map[string]any)
		if gen.ActionType(m[as.discriminator].(string)) != gen.ActionTypeToolCall && i != len(items)-1 {
			return agent.Turn{}, invalid(fmt.Sprintf("/%s/%d: a finish may only be the last action of a turn", as.actions, i), text)
		}
		// Each action's Raw is its own wire form, as a replay reads it.
		data, err := Marshal(m)
		if err != nil {
			return agent.Turn{}, fmt.Errorf("encode a valid action: %w", err)
		}
		if turn.Actions[i], err = as.bind(data, m); err != nil {
			return agent.Turn{}, invalid(fmt.Sprintf("/%s/%d: %v", as.actions, i, err), text)
		}
		turn.Actions[i].Raw = string(data)
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
