package adapt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/specloop/specloop/agent"
)

// Defaults of both providers for a zero Config.
const (
	// DefaultMaxRetries is how often a 429, 5xx or network failure is
	// retried.
	DefaultMaxRetries = 3
	// DefaultTimeout bounds one request attempt.
	DefaultTimeout = 10 * time.Minute
)

// Config configures a provider adapter's Model: it is openai.Config and
// anthropic.Config, one type, so a setting means the same for both and
// model.FromConfig fills it once.
type Config struct {
	// Model is the model name, e.g. "gpt-4o-mini", "claude-sonnet-4-5" or
	// a local server's model.
	Model string
	// BaseURL is the API's base URL, e.g. "http://localhost:11434/v1";
	// empty means the provider's own API.
	BaseURL string
	// APIKey is the key, sent in the provider's header. It is required for
	// the provider's own API and optional for other servers.
	APIKey string
	// Temperature is the sampling temperature; nil leaves the provider's
	// default (some newer models accept no other).
	Temperature *float64
	// MaxOutputTokens caps one reply; 0 means the provider's default
	// (OpenAI: the server's own; Anthropic, whose API requires one:
	// anthropic.DefaultMaxOutputTokens).
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
	// default for its family, or what its server says (see
	// Model.ContextWindow).
	ContextWindow int
}

// A Codec is one provider's wire: it encodes a request body and decodes
// the response (a Decoder per attempt).
type Codec interface {
	// Encode returns the body for req, whose tools are ts, under cfg (its
	// defaults and the system prompt settled); official is set when the
	// base URL is the provider's own API.
	Encode(cfg *Config, official bool, req *agent.Request, ts *Toolset) ([]byte, error)
	// Decoder returns a fresh Decoder for one attempt, which hands each
	// piece of the reply's text to onText (nil: to nobody).
	Decoder(onText func(string)) Decoder
}

// Provider is what differs between the provider adapters, besides their
// Codec.
type Provider struct {
	// Name names the provider in errors, e.g. "openai".
	Name string
	// BaseURL is the provider's own API; Path is the endpoint under a
	// base URL, e.g. "/chat/completions".
	BaseURL, Path string
	// ErrNoAPIKey is the error of a Config for the provider's own API
	// without an API key.
	ErrNoAPIKey error
	// Header holds the provider's own headers; a non-empty API key goes
	// in the header KeyHeader, after KeyPrefix.
	Header               http.Header
	KeyHeader, KeyPrefix string
	// Classify reads the provider's error responses (Endpoint.Classify).
	Classify func(*APIError) (code string, overWindow bool)
	// MaxOutputTokens is the default of Config.MaxOutputTokens.
	MaxOutputTokens int64
	Codec           Codec
	// Window, when set, asks a server that is not the provider's own API
	// for the context window of the model named model, base being the
	// Config's base URL, which ends in /v1 (0: it does not say).
	Window func(ctx context.Context, e *Endpoint, base, model string) int
}

// windowTimeout bounds the question Provider.Window asks.
const windowTimeout = 5 * time.Second

// Model is an agent.Model and agent.ContextSizer over one provider's API.
// It is stateless and safe for concurrent use: runs may share one.
type Model struct {
	api      Endpoint
	codec    Codec
	cfg      Config // with its defaults and the system prompt settled
	official bool
	window   func() int // ContextWindow, worked out once
}

var (
	_ agent.Model        = (*Model)(nil)
	_ agent.ContextSizer = (*Model)(nil)
)

// New returns a Model for cfg over p. It never reads the environment.
func New(p Provider, cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New(p.Name + ": no model name")
	}
	official := cfg.BaseURL == "" || strings.TrimRight(cfg.BaseURL, "/") == p.BaseURL
	if !official {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New(p.Name + ": the base URL must be an absolute http or https URL")
		}
	}
	if official && cfg.APIKey == "" {
		return nil, p.ErrNoAPIKey
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = p.MaxOutputTokens
	}
	cfg.System = SystemPrompt(cfg.System)
	header := p.Header.Clone()
	if cfg.APIKey != "" {
		header.Set(p.KeyHeader, p.KeyPrefix+cfg.APIKey)
	}
	m := &Model{codec: p.Codec, cfg: cfg, official: official, api: Endpoint{
		Provider:   p.Name,
		URL:        strings.TrimRight(cmp.Or(cfg.BaseURL, p.BaseURL), "/") + p.Path,
		Header:     header,
		Client:     cmp.Or(cfg.HTTPClient, &http.Client{}),
		MaxRetries: max(cmp.Or(cfg.MaxRetries, DefaultMaxRetries), 0),
		Timeout:    cfg.Timeout,
		Classify:   p.Classify,
	}}
	m.window = sync.OnceValue(func() int {
		w := cmp.Or(max(cfg.ContextWindow, 0), familyWindow(cfg.Model))
		base := strings.TrimRight(cfg.BaseURL, "/")
		if w == 0 && p.Window != nil && !official && strings.HasSuffix(base, "/v1") {
			ctx, cancel := context.WithTimeout(context.Background(), windowTimeout)
			defer cancel()
			w = p.Window(ctx, &m.api, base, cfg.Model)
		}
		return cmp.Or(max(w, 0), DefaultContextWindow)
	})
	return m, nil
}

// Next asks the model for the next turn of the run: every tool call of
// its reply, in order. For a request with Summarize set it asks for a
// summary of the history instead: the request is the same, with the same
// system prompt and tools (so the provider's prompt cache applies), plus
// SummaryInstruction as a last user message and tool choice none.
func (m *Model) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	if err := ctx.Err(); err != nil {
		return agent.Turn{}, err
	}
	ts, body, err := m.Request(req)
	if err != nil {
		return agent.Turn{}, err
	}
	onText := req.OnText
	if req.Summarize {
		onText = nil // the summary is no text of the run's
	}
	r, err := m.api.Post(ctx, body, func() Decoder { return m.codec.Decoder(onText) })
	switch {
	case err != nil:
		return agent.Turn{}, err
	case !req.Summarize:
		return ts.Turn(r)
	}
	// The reply's text is the summary.
	if text := strings.TrimSpace(r.Text); text != "" && !r.Refusal {
		return agent.Turn{Summary: text, Usage: r.Usage}, nil
	}
	return agent.Turn{Usage: r.Usage}, ErrNoSummary
}

// Request returns the body Next sends for req, and the toolset of its
// tools.
func (m *Model) Request(req *agent.Request) (*Toolset, []byte, error) {
	ts, err := NewToolset(req.Tools)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.api.Provider, err)
	}
	body, err := m.codec.Encode(&m.cfg, m.official, req, ts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.api.Provider, err)
	}
	return ts, body, nil
}

// ContextWindow returns the model's context window in tokens: the
// Config's, else the one of the model's family, else the one its server
// says (Provider.Window, asked once, for at most 5 seconds, of a base URL
// of the compatible servers' form, .../v1), else DefaultContextWindow.
func (m *Model) ContextWindow() int { return m.window() }

// RequestTokens estimates the tokens of the request Next would send for
// req: its body's (EstimateTokens).
func (m *Model) RequestTokens(req *agent.Request) int {
	_, body, err := m.Request(req)
	if err != nil {
		return 0
	}
	return EstimateTokens(body)
}
