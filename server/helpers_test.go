package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/spec"
)

// The 12 × 7 script run of the spec's example.
var (
	calcPrompt    = "Compute 12 x 7 and say whether it is greater than 80."
	calcResponses = []string{
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`{"type":"finish","answer":"12 * 7 = 84, and 84 > 80."}`,
	}
	calcAnswer = "12 * 7 = 84, and 84 > 80."
)

func calcRequest() gen.CreateRunRequest {
	return gen.CreateRunRequest{Task: gen.Task{Prompt: calcPrompt}, Model: sdk.Script(calcResponses...)}
}

// testServer is a server under test on a loopback httptest server, with a
// generated client and an sdk client that both validate every response
// against the spec.
type testServer struct {
	t      *testing.T
	srv    *server.Server
	http   *httptest.Server
	cfg    server.Config
	raw    *gen.Client
	sdk    *sdk.Client
	logBuf *syncBuffer
}

const testToken = "test-token-0123456789"

// newTestServer starts a server; cfg's zero fields get test defaults (a
// temporary data directory and workspace root, the test token).
func newTestServer(t *testing.T, cfg server.Config) *testServer {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.WorkspaceRoot == "" {
		cfg.WorkspaceRoot = t.TempDir()
	}
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	ts := &testServer{t: t, cfg: cfg, logBuf: &syncBuffer{}}
	if cfg.Logger == nil {
		cfg.Logger = newLogger(ts.logBuf)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ts.srv = srv
	ts.http = serveHTTP(srv)
	t.Cleanup(ts.close)
	hc := &http.Client{Transport: &contractTransport{t: t, next: http.DefaultTransport}}
	auth := gen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
		return nil
	})
	if ts.raw, err = gen.NewClient(ts.http.URL, gen.WithHTTPClient(hc), auth); err != nil {
		t.Fatal(err)
	}
	if ts.sdk, err = sdk.New(ts.http.URL, sdk.Config{Token: cfg.Token, HTTPClient: hc}); err != nil {
		t.Fatal(err)
	}
	return ts
}

// serveHTTP serves srv on a loopback httptest server with the server's
// own http.Server settings and connection cap, as `specloop serve` does.
func serveHTTP(srv *server.Server) *httptest.Server {
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = srv.HTTPServer()
	hs.Listener = srv.Listener(hs.Listener)
	hs.Start()
	return hs
}

var closeOnce sync.Map

func (ts *testServer) close() {
	if _, done := closeOnce.LoadOrStore(ts, true); done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("Shutdown: %v", err)
	}
	ts.http.Close()
}

// do sends a raw request with the token and returns status, headers and body.
func (ts *testServer) do(method, path, contentType string, body io.Reader, header ...string) (int, http.Header, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, body)
	if err != nil {
		ts.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+ts.cfg.Token)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := (&http.Client{Transport: &contractTransport{t: ts.t, next: http.DefaultTransport}}).Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// create creates a run through the sdk and fails the test on an error.
func (ts *testServer) create(req gen.CreateRunRequest) gen.Run {
	ts.t.Helper()
	run, err := ts.sdk.CreateRun(context.Background(), req)
	if err != nil {
		ts.t.Fatalf("CreateRun: %v", err)
	}
	return run
}

// wait waits (at most 20 s) for a run to finish.
func (ts *testServer) wait(id string) gen.Run {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := ts.sdk.Wait(ctx, id)
	if err != nil {
		ts.t.Fatalf("Wait(%s): %v", id, err)
	}
	return run
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	ID    string
	Event string
	Data  gen.TraceEvent
}

// readSSE parses a whole text/event-stream body.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var data string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != "" {
				if err := json.Unmarshal([]byte(data), &cur.Data); err != nil {
					t.Fatalf("event data %q: %v", data, err)
				}
				out = append(out, cur)
			}
			cur, data = sseEvent{}, ""
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "id":
			cur.ID = v
		case "event":
			cur.Event = v
		case "data":
			data += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read event stream: %v", err)
	}
	return out
}

// contractTransport validates every response against the spec: its status
// must be declared for the operation and its body (JSON and problem+json)
// must match the declared schema. Event streams and the YAML document are
// checked for status and content type only, so streams stay live.
type contractTransport struct {
	t    *testing.T
	next http.RoundTripper
}

var contractRouter = func() func() (routers.Router, error) {
	var once sync.Once
	var r routers.Router
	var err error
	return func() (routers.Router, error) {
		once.Do(func() {
			doc, perr := contract.ParseSpec(spec.YAML())
			if perr != nil {
				err = perr
				return
			}
			doc.Servers = nil
			r, err = gorillamux.NewRouter(doc)
		})
		return r, err
	}
}()

func (c *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	router, err := contractRouter()
	if err != nil {
		c.t.Errorf("contract router: %v", err)
		return resp, nil
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		// Unknown routes must still answer with a problem.
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			c.t.Errorf("%s %s: %d with content type %q, want application/problem+json", req.Method, req.URL.Path, resp.StatusCode, ct)
		}
		return resp, nil
	}
	ct := resp.Header.Get("Content-Type")
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if ct == "application/json" || ct == "application/problem+json" {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		input.SetBodyBytes(body)
	} else {
		input.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		c.t.Errorf("%s %s: response %d does not match the spec: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return resp, nil
}

// gate blocks the models built by its factory in Next until it is
// opened (or the run is cancelled); entered receives each blocked task.
type gate struct {
	entered chan string
	open    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	seen    map[string]int // entered prompts not yet waited for
}

func newGate() *gate {
	return &gate{entered: make(chan string, 1024), open: make(chan struct{}), seen: map[string]int{}}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// models wraps the default models of the prompts that contain "BLOCK".
func (g *gate) models(cfg gen.ModelConfig) (agent.Model, error) {
	m, err := runner.DefaultModels(cfg)
	if err != nil {
		return nil, err
	}
	return &gatedModel{inner: m, g: g}, nil
}

type gatedModel struct {
	inner agent.Model
	g     *gate
}

func (m *gatedModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	task := req.Task
	if strings.Contains(task.Prompt, "BLOCK") {
		m.g.entered <- task.Prompt
		select {
		case <-m.g.open:
		case <-ctx.Done():
			return agent.Turn{}, ctx.Err()
		}
	}
	return m.inner.Next(ctx, req)
}

// waitEntered waits for a blocked model call of the given prompt.
func (g *gate) waitEntered(t *testing.T, prompt string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		// A prompt that entered while another was awaited is kept for
		// its own wait.
		g.mu.Lock()
		if g.seen[prompt] > 0 {
			g.seen[prompt]--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		select {
		case p := <-g.entered:
			g.mu.Lock()
			g.seen[p]++
			g.mu.Unlock()
		case <-timeout:
			t.Fatalf("no model call for %q", prompt)
		}
	}
}

func blockRequest(prompt string) gen.CreateRunRequest {
	return gen.CreateRunRequest{Task: gen.Task{Prompt: prompt}, Model: sdk.Script(calcResponses...)}
}

// syncBuffer is a goroutine-safe buffer for logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func ptr[T any](v T) *T { return &v }

func problemOf(t *testing.T, body []byte) gen.Problem {
	t.Helper()
	var p gen.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a problem: %q: %v", body, err)
	}
	return p
}

func fmtProblem(p gen.Problem) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// reply is an answer of the generated Client (ts.raw): its status, header
// and body, read whole; it fails the test when the request could not be
// made.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (ts *testServer) answer(resp *http.Response, err error) reply {
	t := ts.t
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, body}
}

// decodeReply decodes r's body as a T once its status is want, and fails
// the test otherwise.
func decodeReply[T any](t *testing.T, r reply, want int) T {
	t.Helper()
	var v T
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, r.body)
	}
	return v
}
