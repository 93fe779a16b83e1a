// Package anthropic is a specloop model backed by Anthropic's Messages API.
//
// The model is offered the runtime's tools (name, description, input schema,
// all from the spec), plus a finish tool whose schema is the spec's Finish.
// Its tool_use blocks become ToolCalls, a finish tool_use becomes a Finish,
// and everything else (text without a tool_use, input that is not a JSON
// object, an unknown tool, a refusal, a reply cut off at max_tokens even in
// the middle of a tool_use, an empty reply, a finish before other tool_use
// blocks) becomes invalid-output feedback that tells the model what to do.
// A reply with several tool_use blocks is one turn: one step whose calls
// run in order. The Model keeps no state between calls; everything comes
// from the request, the tools too, the history's thinking and redacted_thinking blocks
// ride on the turn's first action (gen.ToolCall.Reasoning) and go back
// unchanged before its tool_use.
//
// The system prompt (Config.System, else the default prompt for code tasks)
// and the tools are the same bytes in every request, and cache_control
// marks their end, so they are read from the prompt cache. The Model is an
// agent.ContextSizer that answers summarization requests, and a 400
// "prompt is too long: N tokens > M maximum" is an
// *agent.ContextLengthError naming the window M.
//
// The history goes back as one assistant message per turn, with a tool_use
// block per ToolCall, followed by a user message with the tool_result
// blocks for the same ids, in order; a failed observation's tool_result has is_error set and its text
// starts with "ERROR" (and its error code). Invalid-output feedback is a
// user text block; a finish the completion check rejected is a finish
// tool_use answered by a tool_result with is_error. Consecutive user blocks
// are merged into one message, as the API expects alternating roles.
//
// The reply is streamed: each text_delta goes to Request.OnText as it
// arrives, and the events are assembled into the message that is
// validated; a server that answers the request whole (Content-Type
// application/json) works alike.
//
// The adapter speaks the wire itself (request.go), through the HTTP layer
// it shares with model/openai: network failures, streams cut off or
// failing with an error event, 408, 409, 429 and 5xx (529 overloaded
// included) responses are retried with exponential backoff, honouring
// Retry-After and retry-after-ms; when the retries are exhausted Next
// returns a *model.ProviderError, which ends the run with exit reason
// model_error.
package anthropic

import (
	"errors"
	"net/http"
	"strings"

	"github.com/specloop/specloop/model/internal/adapt"
)

// The environment variables model.FromConfig reads the key and the base
// URL from.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// Defaults for a zero Config.
const (
	// DefaultBaseURL is Anthropic's API.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxOutputTokens is max_tokens when the Config sets none (the
	// API requires one).
	DefaultMaxOutputTokens = 4096
)

// apiVersion is the Messages API version the requests are written for
// (the anthropic-version header).
const apiVersion = "2023-06-01"

// ErrNoAPIKey is returned by New for Anthropic's own API without an API key.
var ErrNoAPIKey = errors.New("anthropic: no API key: set " + EnvAPIKey)

// Config configures a Model; a zero BaseURL is DefaultBaseURL, a zero
// MaxOutputTokens (max_tokens) DefaultMaxOutputTokens.
type Config = adapt.Config

// Model is an agent.Model and agent.ContextSizer over the Messages API. It
// is stateless and safe for concurrent use: runs may share one. Its
// ContextWindow is the Config's, else the default of the model's family
// (200,000 for every claude-* model).
type Model = adapt.Model

// New returns a Model for cfg. It never reads the environment.
func New(cfg Config) (*Model, error) {
	return adapt.New(adapt.Provider{
		Name: "anthropic", BaseURL: DefaultBaseURL, Path: "/v1/messages", ErrNoAPIKey: ErrNoAPIKey,
		Header: http.Header{"Anthropic-Version": {apiVersion}}, KeyHeader: "X-Api-Key", Classify: classify,
		MaxOutputTokens: DefaultMaxOutputTokens, Codec: codec{},
	}, cfg)
}

// promptTooLong starts the message of a request over the context window:
// a 400 invalid_request_error "prompt is too long: N tokens > M maximum".
// The API has no error code for it.
const promptTooLong = "prompt is too long"

// classify reads an error response: its code (error.type), and whether
// it refused the request as over the context window.
func classify(e *adapt.APIError) (string, bool) {
	over := e.StatusCode == http.StatusBadRequest && e.Type == "invalid_request_error" &&
		strings.HasPrefix(strings.ToLower(e.Message), promptTooLong)
	return e.Type, over
}
