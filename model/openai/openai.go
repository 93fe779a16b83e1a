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
// from Config.ContextWindow or its model family; a request estimate from
// the serialized body) that answers summarization requests, and a 400
// context_length_exceeded wraps agent.ErrContextLength.
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
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model/internal/adapt"
)

// Environment variables WithEnv reads.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// Defaults for a zero Config.
const (
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultMaxRetries is how often a 429, 5xx or network failure is
	// retried.
	DefaultMaxRetries = 3
	// DefaultTimeout bounds one request attempt.
	DefaultTimeout = 10 * time.Minute
)

// provider names the provider in errors.
const provider = "openai"

// ErrNoAPIKey is returned by New for OpenAI's own API without an API key.
var ErrNoAPIKey = errors.New("openai: no API key: set " + EnvAPIKey)

// Config configures a Model.
type Config struct {
	// Model is the model name, e.g. "gpt-4o-mini" or an Ollama model.
	Model string
	// BaseURL is the API's base URL, e.g. "http://localhost:11434/v1";
	// empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. It is required for OpenAI's own API
	// and optional for other servers.
	APIKey string
	// Temperature is the sampling temperature; nil leaves the provider's
	// default.
	Temperature *float64
	// MaxOutputTokens caps one reply; 0 leaves the provider's default. It is
	// sent as max_completion_tokens to OpenAI's API and as max_tokens to
	// other servers, which mostly know only that name.
	MaxOutputTokens int64
	// HTTPClient makes the requests; nil means a default client.
	HTTPClient *http.Client
	// MaxRetries is how often a 429, 5xx or network failure is retried;
	// 0 means DefaultMaxRetries, negative means never.
	MaxRetries int
	// Timeout bounds one request attempt; 0 means DefaultTimeout.
	Timeout time.Duration
	// System is the system prompt; empty means the default prompt for code
	// tasks (model/internal/adapt/system_prompt.md). Every "{{finish}}" in
	// it becomes the finish tool's name.
	System string
	// ContextWindow is the model's context window in tokens; 0 means the
	// default for its family (see ContextWindow).
	ContextWindow int
}

// WithEnv returns c with APIKey set from OPENAI_API_KEY and, when c has no
// BaseURL, BaseURL from OPENAI_BASE_URL. getenv is os.Getenv when nil.
func (c Config) WithEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	c.APIKey = getenv(EnvAPIKey)
	if c.BaseURL == "" {
		c.BaseURL = getenv(EnvBaseURL)
	}
	return c
}

// Model is an agent.Model and agent.ContextSizer over a Chat Completions
// API. It is stateless and safe for concurrent use: runs may share one.
type Model struct {
	api      adapt.Endpoint
	cfg      Config // with its defaults and the system prompt settled
	official bool   // the base URL is OpenAI's own API
}

var (
	_ agent.Model        = (*Model)(nil)
	_ agent.ContextSizer = (*Model)(nil)
)

// New returns a Model for cfg. It never reads the environment (see
// WithEnv).
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: no model name")
	}
	official := cfg.BaseURL == "" || sameURL(cfg.BaseURL, DefaultBaseURL)
	if !official {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("openai: the base URL must be an absolute http or https URL")
		}
	}
	if official && cfg.APIKey == "" {
		return nil, ErrNoAPIKey
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.System = adapt.SystemPrompt(cfg.System)
	header := http.Header{}
	if cfg.APIKey != "" {
		header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &Model{cfg: cfg, official: official, api: adapt.Endpoint{
		Provider:   provider,
		URL:        strings.TrimRight(cmp.Or(cfg.BaseURL, DefaultBaseURL), "/") + "/chat/completions",
		Header:     header,
		Client:     cmp.Or(cfg.HTTPClient, &http.Client{}),
		MaxRetries: max(cmp.Or(cfg.MaxRetries, DefaultMaxRetries), 0),
		Timeout:    cfg.Timeout,
		Classify:   classify,
	}}, nil
}

func sameURL(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// Next asks the model for the next turn of the run: every tool call of
// its reply, in order. For a request with Summarize set it asks for a
// summary of the history instead: the request is the same, with the same
// system prompt and tools (so the provider's prompt cache applies), plus
// adapt.SummaryInstruction as a last user message and tool_choice "none".
func (m *Model) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	if err := ctx.Err(); err != nil {
		return agent.Turn{}, err
	}
	ts, body, err := m.request(req)
	if err != nil {
		return agent.Turn{}, err
	}
	onText := req.OnText
	if req.Summarize {
		onText = nil // the summary is no text of the run's
	}
	r, err := m.api.Post(ctx, body, func() adapt.Decoder { return &decoder{onText: onText} })
	if req.Summarize {
		return adapt.Summary(r, err)
	}
	if err != nil {
		return agent.Turn{}, err
	}
	return ts.Turn(r)
}

// ContextWindow returns the model's context window in tokens: the
// Config's, else the default of the model's family (adapt.ContextWindow:
// gpt-4.1 1,047,576; gpt-4o 128,000; o1/o3/o4 200,000; gpt-5 272,000 of
// input; claude-* 200,000; any other 32,768).
func (m *Model) ContextWindow() int { return adapt.ContextWindow(m.cfg.Model, m.cfg.ContextWindow) }

// RequestTokens estimates the tokens of the request Next would send for
// req: its body's (adapt.EstimateTokens).
func (m *Model) RequestTokens(req *agent.Request) int {
	_, body, err := m.request(req)
	if err != nil {
		return 0
	}
	return adapt.EstimateTokens(body)
}

// How a server says a request is over the context window: OpenAI with
// the code context_length_exceeded; vLLM, DeepSeek and other compatible
// servers only in the message ("This model's maximum context length is N
// tokens. However, you requested M tokens ...").
const (
	errContextLength    = "context_length_exceeded"
	msgMaxContextLength = "maximum context length"
)

// classify reads an error response: its code (error.code, else
// error.type), and whether it refused the request as over the context
// window (a 400 saying so).
func classify(e *adapt.APIError) (string, bool) {
	over := e.StatusCode == http.StatusBadRequest &&
		(e.Code == errContextLength || strings.Contains(e.Message, msgMaxContextLength))
	return cmp.Or(e.Code, e.Type), over
}
