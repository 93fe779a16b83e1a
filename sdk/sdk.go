// Package sdk is a Go client for a specloop server (`specloop serve`): it
// creates runs, waits for them, follows their trace events live and calls
// the server's tools. It is a small layer over the client generated from
// spec/agent.yaml (package gen), whose types it uses throughout.
//
// A run's model is sdk.OpenAI(name), sdk.Anthropic(name) or
// sdk.Script(responses...):
//
//	run, err := c.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "..."}, Model: sdk.OpenAI("gpt-4o-mini")})
//
// A run created with an ApprovalPolicy waits for a person before the tool
// calls the policy covers: Approvals iterates over its requests (with the
// calls' arguments), and Approve, ApproveForRun and Deny decide them.
//
// Every error the server answers with is an *APIError carrying the RFC 9457
// problem; errors.Is matches it against ErrNotFound, ErrQueueFull and the
// other sentinels by status:
//
//	run, err := c.GetRun(ctx, id)
//	if errors.Is(err, sdk.ErrNotFound) { ... }
//	var apiErr *sdk.APIError
//	if errors.As(err, &apiErr) { fmt.Println(apiErr.Problem.Detail) }
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/specloop/specloop/gen"
)

// Config configures a Client. The zero value talks to a server without auth
// through a default HTTP client.
type Config struct {
	// Token is the server's bearer token; empty sends none.
	Token string
	// HTTPClient makes the requests; nil means a client that keeps enough
	// idle connections for many concurrent calls. Its Timeout, if any, also
	// bounds event streams: leave it zero and use contexts instead.
	HTTPClient *http.Client
}

// Client talks to one specloop server. It is safe for concurrent use.
type Client struct {
	raw *gen.Client
}

var defaultHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 128
	return &http.Client{Transport: t}
}()

// New returns a client for the server at baseURL, e.g.
// "http://127.0.0.1:8080".
func New(baseURL string, cfg Config) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("sdk: the base URL must be an absolute http or https URL")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient
	}
	opts := []gen.ClientOption{gen.WithHTTPClient(hc)}
	if cfg.Token != "" {
		auth := "Bearer " + cfg.Token
		opts = append(opts, gen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", auth)
			return nil
		}))
	}
	raw, err := gen.NewClient(baseURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	return &Client{raw: raw}, nil
}

// CreateRun queues a run. The returned Run is on the server's disk.
//
// A request without a model fails with ErrModelRequired before anything
// is sent.
func (c *Client) CreateRun(ctx context.Context, req gen.CreateRunRequest) (gen.Run, error) {
	if err := checkModel(req.Model); err != nil {
		return gen.Run{}, fmt.Errorf("sdk: create run: %w", err)
	}
	resp, err := c.raw.CreateRun(ctx, req)
	return decode[gen.Run]("create run", http.StatusAccepted, resp, err)
}

// GetRun returns a run; Result is set once it finished.
func (c *Client) GetRun(ctx context.Context, id string) (gen.Run, error) {
	resp, err := c.raw.GetRun(ctx, id)
	return decode[gen.Run]("get run", http.StatusOK, resp, err)
}

// Transcript returns run id's transcript so far: the task, the model's
// actions with their arguments, what the tools returned and the result,
// redacted of secrets. A run that keeps none is an error matching
// ErrNotFound.
func (c *Client) Transcript(ctx context.Context, id string) ([]gen.TranscriptEntry, error) {
	resp, err := c.raw.GetRunTranscript(ctx, id, nil)
	tr, err := decode[gen.Transcript]("get transcript", http.StatusOK, resp, err)
	return tr.Entries, err
}

// Cancel cancels a queued or running run; it ends with exit reason
// cancelled. Cancelling a finished run is an error matching ErrConflict.
func (c *Client) Cancel(ctx context.Context, id string) (gen.Run, error) {
	resp, err := c.raw.CancelRun(ctx, id)
	return decode[gen.Run]("cancel run", http.StatusAccepted, resp, err)
}

// Wait blocks until the run has finished and returns it with its result.
// It follows the run's event stream (resuming it if the connection drops),
// so it learns of the end at once without polling.
func (c *Client) Wait(ctx context.Context, id string) (gen.Run, error) {
	// Only the end matters here: the events are not decoded.
	if err := c.follow(ctx, id, 0, false, func(_, _ []byte) error { return nil }); err != nil {
		return gen.Run{}, err
	}
	// The server records the result before it sends run_finished, so one
	// read is enough; the loop only guards against an older server.
	delay := 10 * time.Millisecond
	for {
		run, err := c.GetRun(ctx, id)
		if err != nil || run.Status == gen.RunStatusFinished {
			return run, err
		}
		select {
		case <-ctx.Done():
			return gen.Run{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// Tools returns the tools a run on the server offers a model.
func (c *Client) Tools(ctx context.Context) ([]gen.ToolSpec, error) {
	resp, err := c.raw.ListTools(ctx)
	list, err := decode[gen.ToolList]("list tools", http.StatusOK, resp, err)
	return list.Tools, err
}

// Health returns nil when the server answers its health check.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.raw.GetHealth(ctx)
	_, err = decode[gen.Health]("health", http.StatusOK, resp, err)
	return err
}

// decode is the body of a response of status want as a T, or the error
// of the request, or the server's problem.
func decode[T any](op string, want int, resp *http.Response, err error) (T, error) {
	var v T
	if err != nil {
		return v, fmt.Errorf("sdk: %s: %w", op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case err != nil:
		return v, fmt.Errorf("sdk: %s: %w", op, err)
	case resp.StatusCode != want:
		return v, apiError(resp, body)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("sdk: %s: the answer is not the expected JSON: %w", op, err)
	}
	return v, nil
}
