package anthropic

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
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
		// Stream asks for the reply as a stream of events.
		Stream bool `json:"stream"`
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
	Content    []block
	StopReason string `json:"stop_reason"`
	Usage      *usage
}

type block struct {
	Type, Text, ID, Name string
	// Input is a tool_use's input as sent, which should be an object.
	Input                     json.RawMessage
	Thinking, Signature, Data string
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// codec is the Messages wire.
type codec struct{}

func (codec) Decoder(onText func(string)) adapt.Decoder { return &decoder{onText: onText} }

// Encode builds the Messages body for req: the system prompt, the task as
// the first user message, then the history (and the summary instruction
// when req asks for a summary), with the consecutive blocks of one role
// in one message, as the API expects alternating roles.
func (codec) Encode(cfg *adapt.Config, _ bool, req *agent.Request, ts *adapt.Toolset) ([]byte, error) {
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
	var first []any
	if in := req.Task.Instructions; in != nil { // the project's, before the task
		first = append(first, text(*in))
	}
	msgs = append(msgs, message{Role: "user", Content: append(first, text(req.Task.Prompt))})
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
		Model:       cfg.Model,
		MaxTokens:   cfg.MaxOutputTokens,
		System:      []textBlock{{Type: "text", Text: cfg.System, CacheControl: ephemeral}},
		Messages:    msgs,
		Tools:       tools,
		Temperature: cfg.Temperature,
		Stream:      true,
	}
	if req.Summarize {
		p.ToolChoice = &toolChoice{Type: "none"}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return body, nil
}

// reply reduces a Messages response to what decides the action.
func (resp *response) reply() adapt.Reply {
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
	return r
}

// decoder reads a response, whole or streamed: the stream's events are
// assembled into the message they stand for (message_start's message,
// each content block from its content_block_start and its deltas, the
// stop reason and the output usage from message_delta), handing each
// text_delta to onText.
type decoder struct {
	resp   response
	onText func(string)
	// parts holds the streamed parts of each content block, by index.
	parts []*parts
	ended bool // message_stop came
}

// parts are a streamed block's deltas, joined at its end.
type parts struct{ text, input, thinking, signature strings.Builder }

func (d *decoder) Body(data []byte) error { return json.Unmarshal(data, &d.resp) }

// event is any event of a Messages stream.
type event struct {
	Message      response
	Index        int
	ContentBlock block `json:"content_block"`
	Delta        struct {
		Type, Text, Thinking, Signature string
		PartialJSON                     string `json:"partial_json"`
		StopReason                      string `json:"stop_reason"`
	}
	Usage *usage
	Error struct{ Type, Message string }
}

// errorStatus is the HTTP status of each error type the API documents,
// for an error event in a stream that began well (its 200).
var errorStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
	"request_too_large": 413, "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529,
}

func (d *decoder) Event(name string, data []byte) (bool, error) {
	var e event
	if err := json.Unmarshal(data, &e); err != nil {
		return false, err
	}
	switch name {
	case "message_start":
		d.resp = e.Message
		d.resp.Content, d.parts = nil, nil
	case "content_block_start":
		if e.Index != len(d.resp.Content) {
			return false, fmt.Errorf("content block %d starts after %d blocks", e.Index, len(d.resp.Content))
		}
		d.resp.Content = append(d.resp.Content, e.ContentBlock)
		d.parts = append(d.parts, &parts{})
	case "content_block_delta", "content_block_stop":
		if e.Index < 0 || e.Index >= len(d.parts) {
			return false, fmt.Errorf("%s of block %d, which did not start", name, e.Index)
		}
		p := d.parts[e.Index]
		if name == "content_block_stop" {
			b := &d.resp.Content[e.Index]
			b.Text += p.text.String()
			b.Thinking += p.thinking.String()
			b.Signature += p.signature.String()
			if p.input.Len() > 0 { // else the input content_block_start gave ({} for none)
				b.Input = json.RawMessage(p.input.String())
			}
			break
		}
		switch e.Delta.Type {
		case "text_delta":
			p.text.WriteString(e.Delta.Text)
			if d.onText != nil && e.Delta.Text != "" {
				d.onText(e.Delta.Text)
			}
		case "input_json_delta":
			p.input.WriteString(e.Delta.PartialJSON)
		case "thinking_delta":
			p.thinking.WriteString(e.Delta.Thinking)
		case "signature_delta":
			p.signature.WriteString(e.Delta.Signature)
		}
	case "message_delta":
		d.resp.StopReason = cmp.Or(e.Delta.StopReason, d.resp.StopReason)
		if u := e.Usage; u != nil {
			// The counts so far; a count it leaves out stays message_start's.
			if d.resp.Usage == nil {
				d.resp.Usage = &usage{}
			}
			v := d.resp.Usage
			v.InputTokens, v.OutputTokens = cmp.Or(u.InputTokens, v.InputTokens), cmp.Or(u.OutputTokens, v.OutputTokens)
			v.CacheCreationInputTokens = cmp.Or(u.CacheCreationInputTokens, v.CacheCreationInputTokens)
			v.CacheReadInputTokens = cmp.Or(u.CacheReadInputTokens, v.CacheReadInputTokens)
		}
	case "message_stop":
		d.ended = true
		return true, nil
	case "error":
		return false, &adapt.APIError{StatusCode: cmp.Or(errorStatus[e.Error.Type], http.StatusInternalServerError), Type: e.Error.Type, Message: e.Error.Message}
	}
	return false, nil
}

// Complete: a stream is whole only with its message_stop.
func (d *decoder) Complete() bool { return d.ended }

func (d *decoder) Reply() adapt.Reply { return d.resp.reply() }
