package anthropic

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/internal/adapt"
)

// The request is the SDK's own MessageNewParams, sent through
// MessageService.New, so the wire format is whatever the pinned SDK writes
// (see testdata/request_reference.json and TestRequestMatchesReference).

// toolParams converts the toolset to the SDK's custom tools. (Each
// request converts them again: about 0.25 ms, against a model call's
// 0.1-30 s.)
func toolParams(ts *adapt.Toolset) ([]anthropic.ToolUnionParam, error) {
	tools := make([]anthropic.ToolUnionParam, len(ts.Tools))
	for i, t := range ts.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("anthropic: the input schema of %s: %w", t.Name, err)
		}
		tool := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		if i == len(ts.Tools)-1 {
			// The system prompt and the tools are the same for every
			// request of a run: cache them (tools come first in the
			// cached prefix, so this breakpoint covers them all).
			tool.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		tools[i] = anthropic.ToolUnionParam{OfTool: tool}
	}
	return tools, nil
}

// inputSchema is a tool's parameters as the SDK's input schema: always an
// object schema, as the API requires, with every keyword carried unchanged.
// It is serialized here with encoding/json, which orders the keys:
// the SDK writes keywords it has no field for (additionalProperties,
// description, ...) in map order, which differs from request to request
// and would make every request miss the prompt cache.
func inputSchema(params map[string]any) (anthropic.ToolInputSchemaParam, error) {
	schema := maps.Clone(params)
	if schema == nil {
		schema = map[string]any{}
	}
	schema["type"] = "object"
	data, err := json.Marshal(schema)
	if err != nil {
		return anthropic.ToolInputSchemaParam{}, err
	}
	var s anthropic.ToolInputSchemaParam
	param.SetJSON(data, &s)
	return s, nil
}

// params builds the Messages request for req, and returns the toolset of
// its tools: the system prompt, the task as the first user message, then
// the history (and the summary instruction when req asks for a summary),
// with the consecutive blocks of one role in one message, as the API
// expects alternating roles.
func (m *Model) params(req *agent.Request) (*adapt.Toolset, anthropic.MessageNewParams, error) {
	ts, err := adapt.NewToolset(req.Tools)
	if err != nil {
		return nil, anthropic.MessageNewParams{}, fmt.Errorf("anthropic: %w", err)
	}
	tools, err := toolParams(ts)
	if err != nil {
		return nil, anthropic.MessageNewParams{}, err
	}
	turns := ts.Render(req.History)
	msgs := make([]anthropic.MessageParam, 0, len(turns)+1)
	msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(req.Task.Prompt)))
	// user and assistant add a block to the last message when it has the
	// role, or start a message with it.
	user := func(block anthropic.ContentBlockParamUnion) {
		if last := msgs[len(msgs)-1].OfUser; last != nil {
			last.Content = append(last.Content, block)
			return
		}
		msgs = append(msgs, anthropic.NewUserMessage(block))
	}
	assistant := func(block anthropic.ContentBlockParamUnion) {
		if last := msgs[len(msgs)-1].OfAssistant; last != nil {
			last.Content = append(last.Content, block)
			return
		}
		msgs = append(msgs, anthropic.NewAssistantMessage(block))
	}
	for _, t := range turns {
		switch t.Kind {
		case adapt.Call:
			// Thinking blocks go back unchanged, before the call they
			// came with, as the API requires.
			for _, r := range t.Reasoning {
				assistant(reasoningBlock(r))
			}
			if t.Text != "" { // what the model wrote before the call, as it wrote it
				assistant(anthropic.NewTextBlock(t.Text))
			}
			assistant(anthropic.NewToolUseBlock(t.ID, orEmpty(t.Arguments), t.Name))
		case adapt.Result:
			user(toolResult(t))
		case adapt.User:
			user(anthropic.NewTextBlock(t.Text))
		}
	}
	if req.Summarize {
		user(anthropic.NewTextBlock(adapt.SummaryInstruction))
	}
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(m.cfg.Model),
		MaxTokens: m.cfg.MaxOutputTokens,
		System:    []anthropic.TextBlockParam{{Text: m.cfg.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Messages:  msgs,
		Tools:     tools,
	}
	if req.Summarize {
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	}
	if m.cfg.Temperature != nil {
		// SDK v2 has no field for temperature; the API still takes it.
		p.SetExtraFields(map[string]any{"temperature": *m.cfg.Temperature})
	}
	return ts, p, nil
}

// reasoningBlock is a reasoning block as the thinking or redacted_thinking
// block it came from.
func reasoningBlock(r gen.ReasoningBlock) anthropic.ContentBlockParamUnion {
	if r.Type == gen.ReasoningBlockTypeRedactedThinking {
		return anthropic.NewRedactedThinkingBlock(deref(r.Data))
	}
	return anthropic.NewThinkingBlock(deref(r.Signature), deref(r.Thinking))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// toolResult is a Result turn as a tool_result block. An empty result has
// no content (the API refuses empty text blocks).
func toolResult(t adapt.Turn) anthropic.ContentBlockParamUnion {
	if t.Text != "" {
		return anthropic.NewToolResultBlock(t.ID, t.Text, t.IsError)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: t.ID, IsError: anthropic.Bool(t.IsError)}}
}

func orEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}
