package openai

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/internal/adapt"
)

// The request body is written here rather than from the SDK's param types:
// the SDK's encoder re-compacts every nested value, which for a 50-step
// history costs more than a millisecond per call. The body has the fields
// of the Chat Completions request the adapter uses, as the API reference
// names them (see testdata/request_reference.json and
// TestRequestMatchesReferenceShape). Everything else — transport, retries,
// errors, response decoding — is the SDK's.

type chatTool struct {
	Type     string         `json:"type"`
	Function chatToolSchema `json:"function"`
}

type chatToolSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// The roles and the tool type, as the API names them.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
	typeFunction  = "function"
)

// encodeTools encodes the tool definitions once, at New, as the start of a
// request body: `{"tools":[...],`.
func encodeTools(ts *adapt.Toolset) ([]byte, error) {
	tools := make([]chatTool, len(ts.Tools))
	for i, t := range ts.Tools {
		tools[i] = chatTool{Type: typeFunction, Function: chatToolSchema{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
	}
	data, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(`{"tools":`), data...), ','), nil
}

// request writes the Chat Completions request body for the task and
// history:
//
//	{"tools":[...],"model":M,"messages":[system, user task, history...],
//	 "temperature":T,"max_completion_tokens"|"max_tokens":N}
func (m *Model) request(task gen.Task, history agent.History) ([]byte, error) {
	turns := m.toolset.Render(history)
	b := make([]byte, 0, len(m.tools)+len(m.system)+len(task.Prompt)+256*len(turns)+256)
	b = append(b, m.tools...)
	b = append(b, `"model":`...)
	b = adapt.AppendString(b, m.cfg.Model)
	b = append(b, `,"messages":[`...)
	b = textMessage(b, roleSystem, m.system)
	b = append(b, ',')
	b = textMessage(b, roleUser, task.Prompt)
	var args []byte
	for _, t := range turns {
		b = append(b, ',')
		switch t.Kind {
		case adapt.Call:
			var err error
			if args, err = adapt.AppendValue(args[:0], orEmpty(t.Arguments)); err != nil {
				return nil, fmt.Errorf("openai: encode the arguments of a %s call: %w", t.Name, err)
			}
			b = append(b, `{"role":"`+roleAssistant+`","tool_calls":[{"id":`...)
			b = adapt.AppendString(b, t.ID)
			b = append(b, `,"type":"`+typeFunction+`","function":{"name":`...)
			b = adapt.AppendString(b, t.Name)
			b = append(b, `,"arguments":`...)
			b = adapt.AppendString(b, string(args))
			b = append(b, `}}]}`...)
		case adapt.Result:
			b = append(b, `{"role":"`+roleTool+`","tool_call_id":`...)
			b = adapt.AppendString(b, t.ID)
			b = append(b, `,"content":`...)
			b = adapt.AppendString(b, t.Text)
			b = append(b, '}')
		case adapt.User:
			b = textMessage(b, roleUser, t.Text)
		}
	}
	b = append(b, ']')
	if m.cfg.Temperature != nil {
		b = append(b, `,"temperature":`...)
		var err error
		if b, err = adapt.AppendValue(b, *m.cfg.Temperature); err != nil {
			return nil, fmt.Errorf("openai: temperature: %w", err)
		}
	}
	if n := m.cfg.MaxOutputTokens; n > 0 {
		if m.official {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, '}'), nil
}

// textMessage appends {"role":role,"content":text}.
func textMessage(b []byte, role, text string) []byte {
	b = append(b, `{"role":"`...)
	b = append(b, role...)
	b = append(b, `","content":`...)
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
// replaces what it would encode.
var emptyParams = openai.ChatCompletionNewParams{}
