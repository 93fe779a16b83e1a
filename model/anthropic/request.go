package anthropic

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/internal/adapt"
)

// The Messages wire, as much of it as the adapter uses. The fields are in
// the order Anthropic's Go SDK wrote them, and the body is encoded as it
// encoded it (encoding/json: map keys sorted, so the tools' input schemas
// are the same bytes in every request and the prompt cache applies), so
// the bytes are the ones the SDK sent (testdata/request_reference.json and
// TestRequestMatchesReference hold the format to Anthropic's API
// reference).
type (
	request struct {
		MaxTokens  int64       `json:"max_tokens"`
		Messages   []message   `json:"messages"`
		Model      string      `json:"model"`
		System     []textBlock `json:"system"`
		ToolChoice *toolChoice `json:"tool_choice,omitempty"`
		Tools      []tool      `json:"tools"`
		// Temperature: the SDK had no field for it, and wrote it last.
		Temperature *float64 `json:"temperature,omitempty"`
	}
	message struct {
		// Content holds textBlock, toolUseBlock, toolResultBlock and
		// gen.ReasoningBlock values (a thinking or redacted_thinking
		// block, sent back as it came).
		Content []any  `json:"content"`
		Role    string `json:"role"`
	}
	textBlock struct {
		Text         string        `json:"text"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
		Type         string        `json:"type"`
	}
	toolUseBlock struct {
		ID    string `json:"id"`
		Input any    `json:"input"`
		Name  string `json:"name"`
		Type  string `json:"type"`
	}
	// toolResultBlock is a tool's result; an empty result has no content
	// (the API refuses empty text blocks).
	toolResultBlock struct {
		ToolUseID string      `json:"tool_use_id"`
		IsError   bool        `json:"is_error"`
		Content   []textBlock `json:"content,omitempty"`
		Type      string      `json:"type"`
	}
	tool struct {
		InputSchema  map[string]any `json:"input_schema"`
		Name         string         `json:"name"`
		Description  string         `json:"description,omitempty"`
		CacheControl *cacheControl  `json:"cache_control,omitempty"`
	}
	toolChoice struct {
		Type string `json:"type"`
	}
	cacheControl struct {
		Type string `json:"type"`
	}
)

// ephemeral marks the end of the prefix the prompt cache keeps.
var ephemeral = &cacheControl{Type: "ephemeral"}

// response is the part of a Messages response that decides the action.
type response struct {
	Content []struct {
		Type, Text, ID, Name string
		// Input is a tool_use's input as sent, which should be an object.
		Input                     json.RawMessage
		Thinking, Signature, Data string
	}
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	}
}

// request builds the Messages body for req, and returns the toolset of its
// tools: the system prompt, the task as the first user message, then the
// history (and the summary instruction when req asks for a summary), with
// the consecutive blocks of one role in one message, as the API expects
// alternating roles.
func (m *Model) request(req *agent.Request) (*adapt.Toolset, []byte, error) {
	ts, err := adapt.NewToolset(req.Tools)
	if err != nil {
		return nil, nil, fmt.Errorf("anthropic: %w", err)
	}
	tools := make([]tool, len(ts.Tools))
	for i, t := range ts.Tools {
		// Always an object schema, as the API requires, with every
		// keyword carried unchanged.
		schema := maps.Clone(t.Parameters)
		if schema == nil {
			schema = map[string]any{}
		}
		schema["type"] = "object"
		tools[i] = tool{Name: t.Name, Description: t.Description, InputSchema: schema}
	}
	// The system prompt and the tools are the same for every request of a
	// run: cache them (tools come first in the cached prefix, so this
	// breakpoint covers them all).
	tools[len(tools)-1].CacheControl = ephemeral
	text := func(s string) textBlock { return textBlock{Type: "text", Text: s} }
	turns := ts.Render(req.History)
	msgs := make([]message, 0, len(turns)+1)
	msgs = append(msgs, message{Role: "user", Content: []any{text(req.Task.Prompt)}})
	// add adds a block to the last message when it has the role, or
	// starts a message with it.
	add := func(role string, block any) {
		if last := &msgs[len(msgs)-1]; last.Role == role {
			last.Content = append(last.Content, block)
			return
		}
		msgs = append(msgs, message{Role: role, Content: []any{block}})
	}
	for _, t := range turns {
		switch t.Kind {
		case adapt.Call:
			// Thinking blocks go back unchanged, before the call they
			// came with, as the API requires.
			for _, r := range t.Reasoning {
				add("assistant", r)
			}
			if t.Text != "" { // what the model wrote before the call, as it wrote it
				add("assistant", text(t.Text))
			}
			add("assistant", toolUseBlock{Type: "tool_use", ID: t.ID, Name: t.Name, Input: adapt.OrEmpty(t.Arguments)})
		case adapt.Result:
			result := toolResultBlock{Type: "tool_result", ToolUseID: t.ID, IsError: t.IsError}
			if t.Text != "" {
				result.Content = []textBlock{text(t.Text)}
			}
			add("user", result)
		case adapt.User:
			add("user", text(t.Text))
		}
	}
	if req.Summarize {
		add("user", text(adapt.SummaryInstruction))
	}
	p := request{
		Model:       m.cfg.Model,
		MaxTokens:   m.cfg.MaxOutputTokens,
		System:      []textBlock{{Type: "text", Text: m.cfg.System, CacheControl: ephemeral}},
		Messages:    msgs,
		Tools:       tools,
		Temperature: m.cfg.Temperature,
	}
	if req.Summarize {
		p.ToolChoice = &toolChoice{Type: "none"}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, nil, fmt.Errorf("anthropic: encode the request: %w", err)
	}
	return ts, body, nil
}

// reply reduces a Messages response to what decides the action.
func reply(data []byte) (adapt.Reply, error) {
	var resp response
	if err := json.Unmarshal(data, &resp); err != nil {
		return adapt.Reply{}, err
	}
	var r adapt.Reply
	if u := resp.Usage; u != nil {
		// input_tokens excludes prompt-cache reads and writes; the budget
		// counts every prompt token.
		r.Usage = adapt.ToUsage(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens, u.OutputTokens)
	}
	var text strings.Builder
	for _, block := range resp.Content {
		switch block.Type {
		case "text":
			text.WriteString(block.Text)
		case "tool_use":
			r.Calls = append(r.Calls, adapt.ReplyCall{ID: block.ID, Name: block.Name, Arguments: string(block.Input)})
		case string(gen.ReasoningBlockTypeThinking):
			r.Reasoning = append(r.Reasoning, gen.ReasoningBlock{Type: gen.ReasoningBlockTypeThinking, Thinking: &block.Thinking, Signature: &block.Signature})
		case string(gen.ReasoningBlockTypeRedactedThinking):
			r.Reasoning = append(r.Reasoning, gen.ReasoningBlock{Type: gen.ReasoningBlockTypeRedactedThinking, Data: &block.Data})
		}
	}
	r.Text = text.String()
	switch resp.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		r.Truncated = true
	case "refusal":
		r.Refusal, r.RefusalRaw = true, r.Text
	}
	return r, nil
}
