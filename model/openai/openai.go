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
// 429 and 5xx responses are retried by the SDK with exponential backoff,
// honouring Retry-After; when the retries are exhausted Next returns a
// *model.ProviderError, which ends the run with exit reason model_error.
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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
	svc      openai.ChatCompletionService
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
	m := &Model{cfg: cfg, official: official}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(cmp.Or(cfg.HTTPClient, &http.Client{})),
		option.WithMaxRetries(max(cmp.Or(cfg.MaxRetries, DefaultMaxRetries), 0)),
		option.WithRequestTimeout(cfg.Timeout),
	}
	if !official {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// The service, not openai.NewClient, so that nothing is read from the
	// environment behind the Config's back.
	m.svc = openai.NewChatCompletionService(opts...)
	return m, nil
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
	ts, params, err := m.params(req)
	if err != nil {
		return agent.Turn{}, err
	}
	r, err := m.send(ctx, params)
	if req.Summarize {
		return adapt.Summary(r, err)
	}
	if err != nil {
		return agent.Turn{}, err
	}
	return ts.Turn(r)
}

// send makes one Chat Completions call and reduces its response to a
// Reply.
func (m *Model) send(ctx context.Context, params openai.ChatCompletionNewParams) (adapt.Reply, error) {
	var attempts adapt.Attempts
	resp, err := m.svc.New(ctx, params, option.WithMiddleware(attempts.Middleware))
	if err != nil {
		return adapt.Reply{}, adapt.Fail(ctx, provider, err, &attempts, m.cfg.Timeout, status)
	}
	return reply(resp), nil
}

// ContextWindow returns the model's context window in tokens: the
// Config's, else the default of the model's family (adapt.ContextWindow:
// gpt-4.1 1,047,576; gpt-4o 128,000; o1/o3/o4 200,000; gpt-5 272,000 of
// input; claude-* 200,000; any other 32,768).
func (m *Model) ContextWindow() int { return adapt.ContextWindow(m.cfg.Model, m.cfg.ContextWindow) }

// RequestTokens estimates the tokens of the request Next would send for
// req (adapt.RequestTokens).
func (m *Model) RequestTokens(req *agent.Request) int {
	_, params, err := m.params(req)
	if err != nil {
		return 0
	}
	return adapt.RequestTokens(params)
}

// How a server says a request is over the context window: OpenAI with
// the code context_length_exceeded; vLLM, DeepSeek and other compatible
// servers only in the message ("This model's maximum context length is N
// tokens. However, you requested M tokens ...").
const (
	errContextLength    = "context_length_exceeded"
	msgMaxContextLength = "maximum context length"
)

// status extracts the HTTP status and error code of an API error, and
// whether it refused the request as over the context window (a 400 saying
// so).
func status(err error) (int, string, bool) {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return 0, "", false
	}
	code := apiErr.Code
	if code == "" {
		code = apiErr.Type
	}
	over := apiErr.StatusCode == http.StatusBadRequest &&
		(apiErr.Code == errContextLength || strings.Contains(apiErr.Message, msgMaxContextLength))
	return apiErr.StatusCode, code, over
}

// reply reduces a Chat Completions response to what decides the action.
func reply(resp *openai.ChatCompletion) adapt.Reply {
	var r adapt.Reply
	if resp.JSON.Usage.Valid() {
		r.Usage = adapt.ToUsage(resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
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
