package anthropic

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/internal/adapt"
)

// The request body is written here rather than from the SDK's param types:
// the SDK's encoder re-compacts every nested value, which for a 50-step
// history costs more than a millisecond per call. The body has the fields
// of the Messages request the adapter uses, as the API reference names them
// (see testdata/request_reference.json and
// TestRequestMatchesReferenceShape). Everything else — transport, retries,
// errors, response decoding — is the SDK's.

type toolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

// The roles, block types and schema type, as the API names them.
const (
	roleUser        = "user"
	roleAssistant   = "assistant"
	typeText        = "text"
	typeToolUse     = "tool_use"
	typeToolResult  = "tool_result"
	schemaTypeKey   = "type"
	schemaTypeValue = "object"
)

// encodeTools encodes the tool definitions once, at New, as the start of a
// request body: `{"tools":[...],`. An input schema is always an object
// schema, as the API requires.
func encodeTools(ts *adapt.Toolset) ([]byte, error) {
	tools := make([]toolDef, len(ts.Tools))
	for i, t := range ts.Tools {
		schema := make(map[string]any, len(t.Parameters)+1)
		for k, v := range t.Parameters {
			schema[k] = v
		}
		schema[schemaTypeKey] = schemaTypeValue
		tools[i] = toolDef{Name: t.Name, Description: t.Description, InputSchema: schema}
	}
	data, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(`{"tools":`), data...), ','), nil
}

// request writes the Messages request body for the task and history:
//
//	{"tools":[...],"model":M,"max_tokens":N,"system":[{"type":"text","text":S}],
//	 "messages":[{"role":"user","content":[blocks]},...],"temperature":T}
//
// Consecutive blocks of one role share a message, as the API expects
// alternating roles.
func (m *Model) request(task gen.Task, history agent.History) ([]byte, error) {
	turns := m.toolset.Render(history)
	b := make([]byte, 0, len(m.tools)+len(m.system)+len(task.Prompt)+256*len(turns)+256)
	b = append(b, m.tools...)
	b = append(b, `"model":`...)
	b = adapt.AppendString(b, m.cfg.Model)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, m.cfg.MaxOutputTokens, 10)
	b = append(b, `,"system":[`...)
	b = textBlock(b, m.system)
	b = append(b, `],"messages":[{"role":"`+roleUser+`","content":[`...)
	b = textBlock(b, task.Prompt)
	role := roleUser
	// next starts a block of role: in the open message, or in a new one.
	next := func(r string) {
		if r == role {
			b = append(b, ',')
			return
		}
		b = append(b, `]},{"role":"`...)
		b = append(b, r...)
		b = append(b, `","content":[`...)
		role = r
	}
	for _, t := range turns {
		switch t.Kind {
		case adapt.Call:
			next(roleAssistant)
			b = append(b, `{"type":"`+typeToolUse+`","id":`...)
			b = adapt.AppendString(b, t.ID)
			b = append(b, `,"name":`...)
			b = adapt.AppendString(b, t.Name)
			b = append(b, `,"input":`...)
			var err error
			if b, err = adapt.AppendValue(b, orEmpty(t.Arguments)); err != nil {
				return nil, fmt.Errorf("anthropic: encode the input of a %s call: %w", t.Name, err)
			}
			b = append(b, '}')
		case adapt.Result:
			next(roleUser)
			b = append(b, `{"type":"`+typeToolResult+`","tool_use_id":`...)
			b = adapt.AppendString(b, t.ID)
			b = append(b, `,"content":`...)
			b = adapt.AppendString(b, t.Text)
			b = append(b, `,"is_error":`...)
			b = strconv.AppendBool(b, t.IsError)
			b = append(b, '}')
		case adapt.User:
			next(roleUser)
			b = textBlock(b, t.Text)
		}
	}
	b = append(b, `]}]`...)
	if m.cfg.Temperature != nil {
		b = append(b, `,"temperature":`...)
		var err error
		if b, err = adapt.AppendValue(b, *m.cfg.Temperature); err != nil {
			return nil, fmt.Errorf("anthropic: temperature: %w", err)
		}
	}
	return append(b, '}'), nil
}

// textBlock appends {"type":"text","text":text}.
func textBlock(b []byte, text string) []byte {
	b = append(b, `{"type":"`+typeText+`","text":`...)
	b = adapt.AppendString(b, text)
	return append(b, '}')
}

func orEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// emptyParams is what the SDK is given besides the body: the body option
// replaces what it would encode (the configured request timeout overrides
// the SDK's max_tokens-based timeout check).
var emptyParams = anthropic.MessageNewParams{}
