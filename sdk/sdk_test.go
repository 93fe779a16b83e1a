package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

var calc = []string{
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
	`{"type":"finish","answer":"12 * 7 = 84, and 84 > 80."}`,
}

func newServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	_, url, _ := serveRuns(t, cfg)
	return url
}

// serveRuns starts a server on new directories until the test ends, and
// returns it, its URL and its workspace root.
func serveRuns(t *testing.T, cfg server.Config) (*server.Server, string, string) {
	t.Helper()
	cfg.DataDir, cfg.WorkspaceRoot = t.TempDir(), t.TempDir()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		hs.Close()
	})
	return srv, hs.URL, cfg.WorkspaceRoot
}

// dropTransport cuts the first event stream after `after` bytes of events,
// as a dropped connection would, and records the query of every stream.
type dropTransport struct {
	mu      sync.Mutex
	streams []string
	lastIDs []string // the Last-Event-ID of every stream
	cut     int
}

func (d *dropTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/events") {
		return resp, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.streams = append(d.streams, req.URL.RawQuery)
	d.lastIDs = append(d.lastIDs, req.Header.Get("Last-Event-ID"))
	if len(d.streams) == 1 {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: d.cut}
	}
	return resp, nil
}

// cutBody returns an error once left bytes were read, at an event boundary.
type cutBody struct {
	io.ReadCloser
	left int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	p = p[:min(len(p), b.left)]
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}

// TestEventsResumeAfterDrop: when the connection drops mid-stream, Events
// reconnects after the last event it yielded; every event comes once.
func TestEventsResumeAfterDrop(t *testing.T) {
	t.Parallel()
	url := newServer(t, server.Config{})
	plain, _ := sdk.New(url, sdk.Config{})
	ctx := context.Background()
	run, err := plain.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}, Model: sdk.Script(calc...)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Wait(ctx, run.Id); err != nil {
		t.Fatal(err)
	}
	// Learn where the second event ends.
	resp, err := http.Get(url + "/v1/runs/" + run.Id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	second := strings.Index(string(all), "\n\nid: 3\n") + 2

	d := &dropTransport{cut: second + 5} // into the third event
	c, _ := sdk.New(url, sdk.Config{HTTPClient: &http.Client{Transport: d}})
	var types []string
	for ev, err := range c.Events(ctx, run.Id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, string(ev.EventType))
	}
	want := "run_started model_action observation model_action run_finished"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if len(d.streams) != 2 || d.streams[0] != "after=0" || d.streams[1] != "after=2" {
		t.Errorf("streams requested: %q", d.streams)
	}
}

// blockModel blocks until its context is done.
type blockModel struct{}

func (blockModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	<-ctx.Done()
	return agent.Turn{}, ctx.Err()
}

// TestWaitHonoursContext: Wait returns the context's error, and Cancel
// then ends the run cancelled.
func TestWaitHonoursContext(t *testing.T) {
	t.Parallel()
	url := newServer(t, server.Config{Config: runner.Config{Models: func(gen.ModelConfig) (agent.Model, error) { return blockModel{}, nil }}})
	c, _ := sdk.New(url, sdk.Config{})
	run, err := c.CreateRun(context.Background(), gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}, Model: sdk.Script("x")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(ctx, run.Id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v, want DeadlineExceeded", err)
	}
	if _, err := c.Cancel(context.Background(), run.Id); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	run, err = c.Wait(ctx2, run.Id)
	if err != nil || run.Result.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("after Cancel: %v %+v", err, run.Result)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := sdk.New(u, sdk.Config{}); err == nil {
			t.Errorf("New(%q) accepted a bad URL", u)
		}
	}
	if _, err := sdk.New("http://127.0.0.1:8080/prefix", sdk.Config{}); err != nil {
		t.Errorf("New with a path prefix: %v", err)
	}
}

func TestAPIErrorIs(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]error{
		400: sdk.ErrBadRequest, 401: sdk.ErrUnauthorized, 404: sdk.ErrNotFound, 409: sdk.ErrConflict,
		413: sdk.ErrTooLarge, 422: sdk.ErrToolFailed, 429: sdk.ErrQueueFull, 503: sdk.ErrUnavailable, 500: sdk.ErrServer,
	} {
		err := error(&sdk.APIError{Status: status, Problem: gen.Problem{Status: status, Title: http.StatusText(status)}})
		if !errors.Is(err, want) {
			t.Errorf("status %d does not match %v", status, want)
		}
		if status != 404 && errors.Is(err, sdk.ErrNotFound) {
			t.Errorf("status %d matches ErrNotFound", status)
		}
	}
}

// TestNonProblemErrors: an error answer that is not a problem document
// (a proxy's HTML page) still becomes an *APIError with its status.
func TestNonProblemErrors(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>bad gateway</html>")
	}))
	defer hs.Close()
	c, _ := sdk.New(hs.URL, sdk.Config{})
	_, err := c.GetRun(context.Background(), "abc")
	var apiErr *sdk.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Problem.Title != "Bad Gateway" || !errors.Is(err, sdk.ErrServer) {
		t.Fatalf("err = %#v", err)
	}
}
