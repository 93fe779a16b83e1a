// Package openai is a specloop model backed by an OpenAI-compatible Chat
// Completions API: OpenAI itself, or any server that speaks the same
// protocol (Ollama, vLLM, llama.cpp's server, LM Studio).
//
// The model is offered the runtime's tools (name, description, input schema,
// all from the spec) as functions, plus a finish function whose schema is
// the spec's Finish. Its tool calls become ToolCalls, a finish call becomes
// a Finish, and everything else (text without a tool call, arguments that
// are not a JSON object, an unknown function, a refusal, a reply cut off at
// the token limit even in the middle of a call, an empty reply, a finish
// call before other calls) becomes invalid-output feedback that tells the
// model what to do. A reply with parallel tool calls is one turn: one step
// whose calls run in order. The Model keeps no state between calls;
// everything comes from the request, the tools too.
//
// The system prompt (Config.System, else the default prompt for code tasks)
// and the tools are the same bytes in every request, so OpenAI's automatic
// prompt caching applies. The Model is an agent.ContextSizer (its window
// from Config.ContextWindow, its model family, or what its server says:
// vLLM's GET /v1/models, llama.cpp's GET /props, asked of a base URL ending
// in /v1; a request estimate from the serialized body) that answers
// summarization requests, and a 400 over the window (context_length_exceeded,
// or a compatible server's wording) is an *agent.ContextLengthError naming
// the window the server said.
//
// The history goes back as one assistant message per turn, with one tool
// call per ToolCall, followed by a tool message per call with the matching
// tool_call_id, in order; a
// failed observation's text starts with "ERROR" (and its error code).
// Invalid-output feedback is a user message; a finish the completion check
// rejected is a finish call answered by an "ERROR: ..." tool message.
//
// The reply is streamed (stream_options.include_usage for its usage): the
// text of each chat.completion.chunk goes to Request.OnText as it arrives,
// and the chunks are assembled into the reply that is validated; a server
// that answers the request whole (Content-Type application/json) works
// alike.
//
// The adapter speaks the wire itself (request.go), through the HTTP layer
// it shares with model/anthropic: network failures, streams cut off, 408,
// 409, 429 and 5xx responses are retried with exponential backoff,
// honouring Retry-After and retry-after-ms; when the retries are exhausted
// Next returns a *model.ProviderError, which ends the run with exit reason
// model_error.
package openai

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/specloop/specloop/model/internal/adapt"
)

// The environment variables model.FromConfig reads the key and the base
// URL from.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// DefaultBaseURL is OpenAI's API, the base URL of a zero Config.
const DefaultBaseURL = "https://api.openai.com/v1"

// ErrNoAPIKey is returned by New for OpenAI's own API without an API key.
var ErrNoAPIKey = errors.New("openai: no API key: set " + EnvAPIKey)

// Config configures a Model; a zero BaseURL is DefaultBaseURL. Its
// MaxOutputTokens is sent as max_completion_tokens to OpenAI's API and as
// max_tokens to other servers, which mostly know only that name.
type Config = adapt.Config

// Model is an agent.Model and agent.ContextSizer over a Chat Completions
// API. It is stateless and safe for concurrent use: runs may share one.
// Its ContextWindow is the Config's, else the default of the model's
// family (gpt-4.1 1,047,576; gpt-4o 128,000; o1/o3/o4 200,000; gpt-5
// 272,000 of input; claude-* 200,000), else the one its server says, else
// 32,768.
type Model = adapt.Model

// New returns a Model for cfg. It never reads the environment.
func New(cfg Config) (*Model, error) {
	return adapt.New(adapt.Provider{
		Name: "openai", BaseURL: DefaultBaseURL, Path: "/chat/completions", ErrNoAPIKey: ErrNoAPIKey,
		Header: http.Header{}, KeyHeader: "Authorization", KeyPrefix: "Bearer ", Classify: classify,
		Codec: codec{}, Window: serverWindow,
	}, cfg)
}

// serverWindow asks an OpenAI-compatible server, at base (.../v1), for the
// context window of model: vLLM lists it in GET /v1/models as max_model_len
// (of the model, or of the one model served), llama.cpp's server in GET
// /props as default_generation_settings.n_ctx; 0 when neither says.
func serverWindow(ctx context.Context, e *adapt.Endpoint, base, model string) int {
	var models struct {
		Data []struct {
			ID          string
			MaxModelLen int `json:"max_model_len"`
		}
	}
	if e.Get(ctx, base+"/models", &models) {
		for _, m := range models.Data {
			if m.MaxModelLen > 0 && (m.ID == model || len(models.Data) == 1) {
				return m.MaxModelLen
			}
		}
	}
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	e.Get(ctx, strings.TrimSuffix(base, "/v1")+"/props", &props)
	return props.Settings.NCtx
}

// How a server says a request is over the context window: OpenAI with
// the code context_length_exceeded, llama.cpp's server with the type
// exceed_context_size_error; vLLM, DeepSeek and other compatible servers
// only in the message ("This model's maximum context length is N tokens.
// However, you requested M tokens ...", vLLM's "The decoder prompt (length
// M) is longer than the maximum model length of N"), whose window
// adapt.APIError reads.
const (
	errContextLength    = "context_length_exceeded"
	errContextSize      = "exceed_context_size_error"
	msgMaxContextLength = "maximum context length"
)

// classify reads an error response: its code (error.code, else
// error.type), and whether it refused the request as over the context
// window (a 400 saying so).
func classify(e *adapt.APIError) (string, bool) {
	over := e.StatusCode == http.StatusBadRequest && (e.Code == errContextLength || e.Type == errContextSize ||
		e.Window > 0 || strings.Contains(e.Message, msgMaxContextLength))
	return cmp.Or(e.Code, e.Type), over
}
