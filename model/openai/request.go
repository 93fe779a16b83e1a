package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model/internal/adapt"
)

// The Chat Completions wire, as much of it as the adapter uses. The fields
// are in the order OpenAI's Go SDK wrote them, and the body is encoded as
// it encoded it (map keys sorted, no HTML escaping), so the bytes are the
// ones the SDK sent (testdata/request_reference.json and
// TestRequestMatchesReference hold the format to OpenAI's API reference).
type (
	request struct {
		Messages            []message `json:"messages"`
		Model               string    `json:"model"`
		MaxCompletionTokens int64     `json:"max_completion_tokens,omitempty"`
		MaxTokens           int64     `json:"max_tokens,omitempty"`
		Temperature         *float64  `json:"temperature,omitempty"`
		// Stream asks for the reply as a stream of chunks, the last
		// with the usage.
		Stream        bool          `json:"stream"`
		StreamOptions streamOptions `json:"stream_options"`
		ToolChoice    string        `json:"tool_choice,omitempty"`
		Tools         []tool        `json:"tools"`
	}
	// message is a system, user, assistant or tool message. An
	// assistant message without text has no content.
	message struct {
		Content    *string    `json:"content,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
		Role       string     `json:"role"`
	}
	toolCall struct {
		ID       string   `json:"id"`
		Function function `json:"function"`
		Type     string   `json:"type"`
	}
	function struct {
		Arguments string `json:"arguments"`
		Name      string `json:"name"`
	}
	tool struct {
		Function functionDef `json:"function"`
		Type     string      `json:"type"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	functionDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	}
)

// response is the part of a Chat Completions response that decides the
// action, and of a chat.completion.chunk of its stream (a choice's Delta,
// and an Error when the server fails mid-stream).
type response struct {
	Choices []struct {
		Index        int
		Message      assistant
		Delta        assistant
		FinishReason string `json:"finish_reason"`
	}
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	}
	Error *struct{} // its fields are adapt.ParseAPIError's to read
}

// assistant is the assistant's message of a response, or a chunk's part of
// it.
type assistant struct {
	Content   string
	Refusal   string
	ToolCalls []call `json:"tool_calls"`
}

type call struct {
	// Index is a chunk's call, the one its part belongs to.
	Index    int
	ID, Type string
	Function struct{ Name, Arguments string }
	// Custom is a custom tool's call (type "custom"), whose input is free
	// text.
	Custom struct{ Name, Input string }
}

// codec is the Chat Completions wire.
type codec struct{}

func (codec) Decoder(onText func(string)) adapt.Decoder { return &decoder{onText: onText} }

// Encode builds the Chat Completions body for req: the system prompt, the
// task as the first user message, then the history (and the summary
// instruction when req asks for a summary). Consecutive tool calls share
// one assistant message, each answered by its own tool message, as the
// API expects for parallel calls.
func (codec) Encode(cfg *adapt.Config, official bool, req *agent.Request, ts *adapt.Toolset) ([]byte, error) {
	// (Each request converts the tools again: microseconds, against a
	// model call's 0.1-30 s.)
	tools := make([]tool, len(ts.Tools))
	for i, t := range ts.Tools {
		tools[i] = tool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
	}
	text := func(role, s string) message { return message{Role: role, Content: &s} }
	turns := ts.Render(req.History)
	msgs := make([]message, 0, len(turns)+4)
	msgs = append(msgs, text("system", cfg.System))
	if in := req.Task.Instructions; in != nil { // the project's, before the task
		msgs = append(msgs, text("user", *in))
	}
	msgs = append(msgs, text("user", req.Task.Prompt))
	open := -1 // the index of the assistant message of the calls just rendered
	for _, t := range turns {
		if t.Kind != adapt.Call {
			open = -1
		}
		switch t.Kind {
		case adapt.Call:
			args, err := json.Marshal(adapt.OrEmpty(t.Arguments))
			if err != nil {
				return nil, fmt.Errorf("encode the arguments of a %s call: %w", t.Name, err)
			}
			if open < 0 {
				open = len(msgs)
				msgs = append(msgs, message{Role: "assistant"})
			}
			if t.Text != "" { // what the model wrote with the calls: its message's content
				msgs[open].Content = &t.Text
			}
			msgs[open].ToolCalls = append(msgs[open].ToolCalls, toolCall{ID: t.ID, Type: "function", Function: function{Name: t.Name, Arguments: string(args)}})
		case adapt.Result:
			msg := text("tool", t.Text)
			msg.ToolCallID = t.ID
			msgs = append(msgs, msg)
		case adapt.User:
			msgs = append(msgs, text("user", t.Text))
		}
	}
	p := request{Model: cfg.Model, Messages: msgs, Tools: tools, Temperature: cfg.Temperature, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}}
	if req.Summarize {
		p.Messages = append(p.Messages, text("user", adapt.SummaryInstruction))
		p.ToolChoice = "none"
	}
	if n := cfg.MaxOutputTokens; n > 0 {
		// OpenAI's API deprecated max_tokens; other servers mostly know
		// only that name.
		if official {
			p.MaxCompletionTokens = n
		} else {
			p.MaxTokens = n
		}
	}
	body, err := adapt.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return body, nil
}

// reply reduces a Chat Completions response to what decides the action.
func (resp *response) reply() adapt.Reply {
	var r adapt.Reply
	if u := resp.Usage; u != nil {
		r.Usage = adapt.ToUsage(u.PromptTokens, u.CompletionTokens)
	}
	if len(resp.Choices) == 0 {
		return r
	}
	choice := resp.Choices[0]
	msg := choice.Message
	for _, tc := range msg.ToolCalls {
		c := adapt.ReplyCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if tc.Type == "custom" {
			c.Name, c.Arguments = tc.Custom.Name, tc.Custom.Input
		}
		r.Calls = append(r.Calls, c)
	}
	r.Text = msg.Content
	if msg.Refusal != "" {
		r.Refusal, r.RefusalRaw = true, msg.Refusal
	}
	switch choice.FinishReason {
	case "length":
		r.Truncated = true
	case "content_filter":
		r.Refusal = true
		if r.RefusalRaw == "" {
			r.RefusalRaw = msg.Content
		}
	}
	return r
}

// decoder reads a response, whole or streamed: the stream's chunks are
// assembled into the response they stand for (the text, the refusal and
// each call's arguments joined in order, a call's parts tied by index),
// handing each piece of text to onText.
type decoder struct {
	resp   response
	onText func(string)
	// The stream's parts, joined by Reply.
	streamed      bool
	text, refusal strings.Builder
	calls         []*streamedCall
}

type streamedCall struct {
	call
	args strings.Builder
}

func (d *decoder) Body(data []byte) error { return json.Unmarshal(data, &d.resp) }

// Event takes a chunk; "[DONE]" ends the stream.
func (d *decoder) Event(_ string, data []byte) (bool, error) {
	if string(data) == "[DONE]" {
		return true, nil
	}
	var c response
	if err := json.Unmarshal(data, &c); err != nil {
		return false, err
	}
	d.streamed = true
	if c.Error != nil {
		// The server failed after the stream began well (its 200).
		return false, adapt.ParseAPIError(http.StatusInternalServerError, data)
	}
	if c.Usage != nil {
		d.resp.Usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only the first choice is read
		}
		if len(d.resp.Choices) == 0 {
			d.resp.Choices = append(d.resp.Choices, ch)
		}
		if ch.FinishReason != "" {
			d.resp.Choices[0].FinishReason = ch.FinishReason
		}
		if t := ch.Delta.Content; t != "" {
			d.text.WriteString(t)
			if d.onText != nil {
				d.onText(t)
			}
		}
		d.refusal.WriteString(ch.Delta.Refusal)
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index > agent.MaxTurnActions {
				return false, fmt.Errorf("a tool call part of index %d", tc.Index)
			}
			for len(d.calls) <= tc.Index {
				d.calls = append(d.calls, &streamedCall{})
			}
			c := d.calls[tc.Index]
			c.ID, c.Type = cmp.Or(c.ID, tc.ID), cmp.Or(c.Type, tc.Type)
			c.Function.Name += tc.Function.Name
			c.Custom.Name += tc.Custom.Name
			c.args.WriteString(tc.Function.Arguments + tc.Custom.Input)
		}
	}
	return false, nil
}

// Complete: a stream that ends without "[DONE]" (some compatible servers
// send none) is whole once its choice has a finish reason.
func (d *decoder) Complete() bool {
	return len(d.resp.Choices) > 0 && d.resp.Choices[0].FinishReason != ""
}

func (d *decoder) Reply() adapt.Reply {
	if d.streamed && len(d.resp.Choices) > 0 {
		msg := &d.resp.Choices[0].Message
		msg.Content, msg.Refusal = d.text.String(), d.refusal.String()
		for _, c := range d.calls {
			c.Function.Arguments, c.Custom.Input = c.args.String(), c.args.String()
			msg.ToolCalls = append(msg.ToolCalls, c.call)
		}
	}
	return d.resp.reply()
}
