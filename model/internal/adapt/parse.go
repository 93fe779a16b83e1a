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
	disc := discriminator(s)
	if disc == "" {
		return nil, fmt.Errorf("spec: Action has no discriminator")
	}
	return &actionSchema{validator: v, discriminator: disc}, nil
})

// discriminator is the property name of a schema's OpenAPI discriminator,
// or "".
func discriminator(s map[string]any) string {
	d, _ := s["discriminator"].(map[string]any)
	name, _ := d["propertyName"].(string)
	return name
}

// compileComponent returns the spec's schema component name and its
// validator. Model output is neither a request nor a response, so readOnly
// and writeOnly do not apply (schema.Neither).
func compileComponent(name string) (map[string]any, *schema.Validator, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, nil, err
	}
	s, ok := doc.Schemas[name]
	if !ok {
		return nil, nil, fmt.Errorf("spec has no %s schema", name)
	}
	v, err := schema.Compile(s, schema.Neither)
	if err != nil {
		return nil, nil, err
	}
	return s, v, nil
}

// ParseAction is model.ParseAction, the JSON adapter.
func ParseAction(text string) (agent.Action, error) {
	as, err := loadActionSchema()
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
		err = as.validator.Validate(value)
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
func (as *actionSchema) bind(text []byte, obj map[string]any) (agent.Action, error) {
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
	required, _ := s["required"].([]any)
	if len(required) != 1 {
		return nil, fmt.Errorf("spec: Turn must have one required property")
	}
	actions, _ := required[0].(string)
	return &turnSchema{validator: v, actions: actions}, nil
})

// ParseTurn is model.ParseTurn: an Action, or a Turn of several.
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
		if gen.ActionType(m[as.discriminator].(string)) != gen.ActionTypeToolCall && i != len(items)-1 {
			return agent.Turn{}, invalid(fmt.Sprintf("/%s/%d: a finish may only be the last action of a turn", ts.actions, i), text)
		}
		// Each action's Raw is its own wire form, as a replay reads it.
		data, err := Marshal(m)
		if err != nil {
			return agent.Turn{}, fmt.Errorf("encode a valid action: %w", err)
		}
		if turn.Actions[i], err = as.bind(data, m); err != nil {
			return agent.Turn{}, invalid(fmt.Sprintf("/%s/%d: %v", ts.actions, i, err), text)
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
