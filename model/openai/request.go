package openai

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model/internal/adapt"
)

// The request is the SDK's own ChatCompletionNewParams, sent through
// ChatCompletionService.New, so the wire format is whatever the pinned SDK
// writes (see testdata/request_reference.json and TestRequestMatchesReference).

// toolParams converts the toolset to the SDK's function tools. (Each
// request converts them again: about 60 µs, against a model call's
// 0.1-30 s.)
func toolParams(ts *adapt.Toolset) []openai.ChatCompletionToolUnionParam {
	tools := make([]openai.ChatCompletionToolUnionParam, len(ts.Tools))
	for i, t := range ts.Tools {
		fn := openai.FunctionDefinitionParam{Name: t.Name, Parameters: openai.FunctionParameters(t.Parameters)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		tools[i] = openai.ChatCompletionFunctionTool(fn)
	}
	return tools
}

// params builds the Chat Completions request for req, and returns the
// toolset of its tools: the system prompt, the task as the first user
// message, then the history (and the summary instruction when req asks
// for a summary). Consecutive tool calls share one assistant message, each
// answered by its own tool message, as the API expects for parallel calls.
func (m *Model) params(req *agent.Request) (*adapt.Toolset, openai.ChatCompletionNewParams, error) {
	ts, err := adapt.NewToolset(req.Tools)
	if err != nil {
		return nil, openai.ChatCompletionNewParams{}, fmt.Errorf("openai: %w", err)
	}
	tools := toolParams(ts)
	turns := ts.Render(req.History)
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(turns)+3)
	msgs = append(msgs, openai.SystemMessage(m.cfg.System), openai.UserMessage(req.Task.Prompt))
	var open *openai.ChatCompletionAssistantMessageParam // the assistant message of the calls just rendered
	for _, t := range turns {
		if t.Kind != adapt.Call {
			open = nil
		}
		switch t.Kind {
		case adapt.Call:
			args, err := json.Marshal(orEmpty(t.Arguments))
			if err != nil {
				return nil, openai.ChatCompletionNewParams{}, fmt.Errorf("openai: encode the arguments of a %s call: %w", t.Name, err)
			}
			call := openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       t.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: t.Name, Arguments: string(args)},
			}}
			if open == nil {
				open = &openai.ChatCompletionAssistantMessageParam{}
				msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: open})
			}
			if t.Text != "" { // what the model wrote with the calls: its message's content
				open.Content.OfString = openai.String(t.Text)
			}
			open.ToolCalls = append(open.ToolCalls, call)
		case adapt.Result:
			msgs = append(msgs, openai.ToolMessage(t.Text, t.ID))
		case adapt.User:
			msgs = append(msgs, openai.UserMessage(t.Text))
		}
	}
	p := openai.ChatCompletionNewParams{Model: m.cfg.Model, Messages: msgs, Tools: tools}
	if req.Summarize {
		p.Messages = append(p.Messages, openai.UserMessage(adapt.SummaryInstruction))
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(string(openai.ChatCompletionToolChoiceOptionAutoNone))}
	}
	if m.cfg.Temperature != nil {
		p.Temperature = openai.Float(*m.cfg.Temperature)
	}
	if n := m.cfg.MaxOutputTokens; n > 0 {
		// OpenAI's API deprecated max_tokens; other servers mostly know
		// only that name.
		if m.official {
			p.MaxCompletionTokens = openai.Int(n)
		} else {
			p.MaxTokens = openai.Int(n)
		}
	}
	return ts, p, nil
}

func orEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}
