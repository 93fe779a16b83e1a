package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/tools/example/weather"
)

// The HTTP contract test drives every operation of spec/agent.yaml against
// the real server for every status the spec declares for it, and validates
// each request and each response against the spec with kin-openapi's
// openapi3filter (see internal/contract.HTTP). It fails when a declared
// (operation, status) has no case, when the server answers with a status or
// a body the spec does not declare, and when the server serves a route the
// spec lacks.

const (
	ctToken     = "contract-token-0123456789"
	ctBodyLimit = 64 << 10
	// ctFault makes the fault injector panic inside the handler chain, after
	// validation, so the server's recovery answers 500.
	ctFault = "X-Contract-Fault"
	// ctBlock in a prompt makes the run's model wait until the run is
	// cancelled.
	ctBlock = "CONTRACT-BLOCK"
)

// Server kinds the cases run against.
const (
	ctMain       = "main"        // commands allowed, small body limit
	ctNoCommands = "no-commands" // commands not allowed
	ctFullQueue  = "full-queue"  // one slot, a queue of one
	ctClosed     = "closed"      // shut down: refuses new runs
	ctNoToken    = "no-token"    // no token: serves loopback Host names only
	ctOneStream  = "one-stream"  // at most one event stream open
	ctIndexDown  = "index-down"  // an engine whose run index cannot be reached
)

// ctServer is one server under test.
type ctServer struct {
	srv     *server.Server
	http    *httptest.Server
	cfg     server.Config
	echo    *echo.Echo
	stopped bool
}

// ctEnv holds the servers, the validator and the runs the cases use.
type ctEnv struct {
	t        *testing.T
	doc      *openapi3.T
	hv       *contract.HTTP
	servers  map[string]*ctServer
	client   *http.Client
	finished string // a finished run on the main server
	blocked  string // a run waiting in its model on the main server
	// finishedRuns holds a finished run of each server kind (finishedOn).
	finishedRuns map[string]string
	nextWS       int
}

// ctReq is a case's request; the method and path template come from the
// spec's operation.
type ctReq struct {
	params map[string]string
	query  url.Values
	header http.Header
	body   []byte
	noAuth bool
	fault  bool
	host   string // the Host header, when not the server's address
}

// ctCase is one request of the case table and what it must prove.
type ctCase struct {
	name    string
	server  string // the server kind; "" is ctMain
	invalid bool   // the request breaks the spec on purpose (400, 401)
	req     func(e *ctEnv) ctReq
	check   func(t *testing.T, e *ctEnv, body []byte) // optional
}

func TestContractHTTP(t *testing.T) {
	t.Parallel()
	e := newCtEnv(t)
	cases := ctCases(e)
	declared := contract.Responses(e.doc)
	for _, missing := range ctMissing(declared, cases) {
		t.Error(missing)
	}
	for _, d := range declared {
		for _, c := range cases[d.OperationID][d.Status] {
			t.Run(fmt.Sprintf("%s/%d/%s", d.OperationID, d.Status, c.name), func(t *testing.T) {
				e.run(t, d, c)
			})
		}
	}
	t.Run("routes", func(t *testing.T) {
		var served []contract.Route
		for _, r := range e.servers[ctMain].echo.Routes() {
			if strings.HasPrefix(r.Path+"/", server.UIPath) {
				continue // the web page's files (webui), not an API operation
			}
			served = append(served, contract.Route{Method: r.Method, Path: r.Path})
		}
		if ps := contract.CheckRoutes(e.doc, served); len(ps) > 0 {
			t.Errorf("the server's routes differ from the spec:\n%s", contract.Format(ps))
		}
	})
	t.Run("traces", func(t *testing.T) {
		e.stopAll()
		n := 0
		for _, kind := range slices.Sorted(maps.Keys(e.servers)) {
			paths, err := filepath.Glob(filepath.Join(e.servers[kind].cfg.DataDir, "traces", "*.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				n++
				if err := contract.ValidateTraceFile(p); err != nil {
					t.Errorf("server %q: %v", kind, err)
				}
			}
		}
		if n == 0 {
			t.Error("the runs wrote no trace to validate")
		}
	})
}

// ctMissing lists the declared (operation, status) pairs without a case and
// the cases for statuses the spec does not declare.
func ctMissing(declared []contract.Response, cases map[string]map[int][]ctCase) []string {
	var out []string
	want := map[string]map[int]bool{}
	for _, d := range declared {
		if want[d.OperationID] == nil {
			want[d.OperationID] = map[int]bool{}
		}
		want[d.OperationID][d.Status] = true
		if len(cases[d.OperationID][d.Status]) == 0 {
			out = append(out, fmt.Sprintf("no contract case for %s: the spec declares it; add a case to ctCases in server/contract_test.go (a tool's 422: to ctToolErrors)", d))
		}
	}
	for _, op := range slices.Sorted(maps.Keys(cases)) {
		for _, status := range slices.Sorted(maps.Keys(cases[op])) {
			if !want[op][status] {
				out = append(out, fmt.Sprintf("the case table has %s %d, which the spec does not declare for that operation", op, status))
			}
		}
	}
	return out
}

func newCtEnv(t *testing.T) *ctEnv {
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	hv, err := contract.NewHTTP(doc)
	if err != nil {
		t.Fatal(err)
	}
	e := &ctEnv{t: t, doc: doc, hv: hv, servers: map[string]*ctServer{}, client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(e.stopAll)
	e.server(ctMain)
	e.server(ctNoCommands)
	// A finished run, from the spec's own createRun example.
	run := e.createRun(ctMain, ctExample(t, doc, "createRun"))
	e.finished = run.Id
	e.waitStatus(ctMain, run.Id, gen.RunStatusFinished)
	// A run that waits in its model until cancelled, in its own workspace
	// so that it holds up no other run.
	if err := os.Mkdir(filepath.Join(e.servers[ctMain].cfg.WorkspaceRoot, "blocked"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.blocked = e.createRun(ctMain, ctBlockedRun("blocked")).Id
	e.waitStatus(ctMain, e.blocked, gen.RunStatusRunning)
	return e
}

// server returns the server of a kind, starting it on first use.
func (e *ctEnv) server(kind string) *ctServer {
	if s := e.servers[kind]; s != nil {
		return s
	}
	cfg := server.Config{Token: ctToken, BodyLimit: ctBodyLimit, Config: runner.Config{DataDir: e.t.TempDir(), WorkspaceRoot: e.t.TempDir(), AllowCommands: kind != ctNoCommands, Models: ctModels, ToolSpecs: []*tools.Spec{ctCustomTool(e.t)}}}
	if kind != ctNoCommands { // the server without metrics answers getMetrics 404
		m, err := telemetry.NewMetrics()
		if err != nil {
			e.t.Fatal(err)
		}
		cfg.Telemetry = &telemetry.Telemetry{Metrics: m}
	}
	switch kind {
	case ctFullQueue:
		cfg.MaxConcurrent, cfg.QueueSize = 1, 1
	case ctNoToken:
		cfg.Token = ""
	case ctOneStream:
		cfg.MaxStreams = 1
	case ctIndexDown:
		ie := newIndexedEngine()
		ie.down.Store(true)
		cfg.Engine = ie
	}
	if err := contract.WriteFixture(cfg.WorkspaceRoot); err != nil {
		e.t.Fatal(err)
	}
	srv, err := server.New(cfg)
	if err != nil {
		e.t.Fatalf("server.New: %v", err)
	}
	ec, ok := srv.Handler().(*echo.Echo)
	if !ok {
		e.t.Fatalf("server.Handler() is a %T, not the *echo.Echo whose routes the contract compares with the spec", srv.Handler())
	}
	// Innermost middleware: a request carrying ctFault panics after it
	// passed auth and validation, as a failing handler would.
	ec.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Header.Get(ctFault) != "" {
				panic("contract test: injected handler failure")
			}
			return next(c)
		}
	})
	s := &ctServer{srv: srv, http: serveHTTP(srv), cfg: cfg, echo: ec}
	e.servers[kind] = s
	if kind == ctClosed {
		e.stop(s)
	}
	return s
}

func (e *ctEnv) stop(s *ctServer) {
	if s.stopped {
		return
	}
	s.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		e.t.Errorf("Shutdown: %v", err)
	}
}

func (e *ctEnv) stopAll() {
	for _, s := range e.servers {
		e.stop(s)
		s.http.Close()
	}
}

// ctModels are the server's default models, except that a prompt with
// ctBlock waits until its run is cancelled.
func ctModels(cfg gen.ModelConfig) (agent.Model, error) {
	m, err := runner.DefaultModels(cfg)
	if err != nil {
		return nil, err
	}
	return ctBlocking{m}, nil
}

type ctBlocking struct{ inner agent.Model }

func (m ctBlocking) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	task := req.Task
	if strings.Contains(task.Prompt, ctBlock) {
		<-ctx.Done()
		return agent.Turn{}, ctx.Err()
	}
	return m.inner.Next(ctx, req)
}

// ctBlockedRun is a createRun body whose run waits in its model.
func ctBlockedRun(workspace string) []byte {
	body := map[string]any{
		"task":  map[string]any{"prompt": ctBlock + " until cancelled"},
		"model": map[string]any{"provider": "script", "responses": []string{`{"type":"finish","answer":"done"}`}},
	}
	if workspace != "" {
		body["workspace"] = workspace
	}
	return ctJSON(body)
}

// send sends a case's request for operation d to a server and validates the
// exchange.
func (e *ctEnv) send(t *testing.T, kind string, d contract.Response, r ctReq) (int, []byte, contract.Verdict) {
	t.Helper()
	if kind == "" {
		kind = ctMain
	}
	s := e.server(kind)
	path := d.Path
	for k, v := range r.params {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
	}
	u := s.http.URL + path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequest(d.Method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !r.noAuth {
		req.Header.Set("Authorization", "Bearer "+ctToken)
	}
	if r.fault {
		req.Header.Set(ctFault, "panic")
	}
	if r.host != "" {
		req.Host = r.host
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", d.Method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the response: %v", d.Method, path, err)
	}
	v, err := e.hv.Check(context.Background(), contract.Exchange{Request: req, RequestBody: r.body, Status: resp.StatusCode, Header: resp.Header, Body: data})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data, v
}

// run runs one case and checks the exchange against the spec.
func (e *ctEnv) run(t *testing.T, d contract.Response, c ctCase) {
	r := c.req(e)
	status, body, v := e.send(t, c.server, d, r)
	if v.OperationID != d.OperationID {
		t.Fatalf("the request was routed to %s, not %s", v.OperationID, d.OperationID)
	}
	switch {
	case c.invalid && v.Request == nil:
		t.Errorf("%s: the case means to send a request the spec rejects, but the spec accepts it", d)
	case !c.invalid && v.Request != nil:
		t.Errorf("%s: the case's request does not match the spec: %v", d, v.Request)
	}
	if v.Response != nil {
		t.Errorf("%s: the server answered %d, which does not match the spec for %s: %v\nbody: %s", d, status, d.OperationID, v.Response, clipBody(body))
	}
	if status != d.Status {
		t.Fatalf("%s: the server answered %d, want %d\nbody: %s", d, status, d.Status, clipBody(body))
	}
	if c.check != nil {
		c.check(t, e, body)
	}
}

func clipBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// do sends a setup request and fails unless the server answers want with a
// response that matches the spec.
func (e *ctEnv) do(kind, opID string, r ctReq, want int) []byte {
	e.t.Helper()
	var d contract.Response
	for _, x := range contract.Responses(e.doc) {
		if x.OperationID == opID && x.Status == want {
			d = x
		}
	}
	if d.OperationID == "" {
		e.t.Fatalf("the spec does not declare %s %d", opID, want)
	}
	status, body, v := e.send(e.t, kind, d, r)
	if status != want || v.Response != nil || v.Request != nil {
		e.t.Fatalf("setup %s: status %d (want %d), request: %v, response: %v\n%s", opID, status, want, v.Request, v.Response, clipBody(body))
	}
	return body
}

func (e *ctEnv) createRun(kind string, body []byte) gen.Run {
	e.t.Helper()
	var run gen.Run
	if err := json.Unmarshal(e.do(kind, "createRun", ctReq{body: body}, http.StatusAccepted), &run); err != nil {
		e.t.Fatal(err)
	}
	return run
}

func (e *ctEnv) waitStatus(kind, id string, want gen.RunStatus) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var run gen.Run
		if err := json.Unmarshal(e.do(kind, "getRun", ctReq{params: map[string]string{"run_id": id}}, http.StatusOK), &run); err != nil {
			e.t.Fatal(err)
		}
		if run.Status == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s is %s after 20s, want %s", id, run.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// workspace creates a fresh fixture workspace under the main server's root
// and returns its name.
func (e *ctEnv) workspace() string {
	e.nextWS++
	name := "ws-" + strconv.Itoa(e.nextWS)
	dir := filepath.Join(e.servers[ctMain].cfg.WorkspaceRoot, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := contract.WriteFixture(dir); err != nil {
		e.t.Fatal(err)
	}
	return name
}

func ctJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// ctExamples returns the request body examples of an operation, by name.
func ctExamples(t *testing.T, doc *openapi3.T, opID string) map[string][]byte {
	t.Helper()
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID != opID || op.RequestBody == nil {
				continue
			}
			out := map[string][]byte{}
			for name, ex := range op.RequestBody.Value.Content.Get("application/json").Examples {
				out[name] = ctJSON(ex.Value.Value)
			}
			if len(out) == 0 {
				t.Fatalf("operation %s has no request body example", opID)
			}
			return out
		}
	}
	t.Fatalf("no operation %s with a request body", opID)
	return nil
}

// ctExample returns the first (by name) request body example of an
// operation.
func ctExample(t *testing.T, doc *openapi3.T, opID string) []byte {
	exs := ctExamples(t, doc, opID)
	return exs[slices.Sorted(maps.Keys(exs))[0]]
}

// ctPad inserts whitespace into a JSON object until it is larger than the
// body limit: the body stays valid for the spec, but too large.
func ctPad(body []byte) []byte {
	return append(append([]byte("{"), bytes.Repeat([]byte(" "), ctBodyLimit+1)...), body[1:]...)
}

// ctWith adds a property to a JSON object.
func ctWith(body []byte, key string, value any) []byte {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		panic(err)
	}
	m[key] = value
	return ctJSON(m)
}

func ctQuery(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

func ctRun(id string) map[string]string { return map[string]string{"run_id": id} }

func ctCall(runID, callID string) map[string]string {
	return map[string]string{"run_id": runID, "call_id": callID}
}

// finishedIn creates the spec's createRun example in workspace ws of the
// main server and returns its id once it finished.
func (e *ctEnv) finishedIn(ws string) string {
	e.t.Helper()
	run := e.createRun(ctMain, ctWith(ctExample(e.t, e.doc, "createRun"), "workspace", ws))
	e.waitStatus(ctMain, run.Id, gen.RunStatusFinished)
	return run.Id
}

// finishedOn returns a finished run of a server kind, made on first use.
func (e *ctEnv) finishedOn(kind string) string {
	e.t.Helper()
	if id := e.finishedRuns[kind]; id != "" {
		return id
	}
	run := e.createRun(kind, ctExample(e.t, e.doc, "createRun"))
	e.waitStatus(kind, run.Id, gen.RunStatusFinished)
	if e.finishedRuns == nil {
		e.finishedRuns = map[string]string{}
	}
	e.finishedRuns[kind] = run.Id
	return run.Id
}

// fillQueue fills a server's slots and queue with blocked runs, unless a
// case filled them already; the server's finished run (finishedOn) is
// made first.
func (e *ctEnv) fillQueue(kind string) {
	e.t.Helper()
	e.finishedOn(kind)
	for range 8 {
		var d contract.Response
		for _, x := range contract.Responses(e.doc) {
			if x.OperationID == "createRun" {
				d = x
			}
		}
		if status, _, _ := e.send(e.t, kind, d, ctReq{body: ctBlockedRun("")}); status == http.StatusTooManyRequests {
			return
		}
	}
	e.t.Fatal("the run queue never filled")
}

// waitingRun creates a run, in a workspace of its own, whose calculator
// calls c1 and c2 each wait for approval, and returns its id once c1 waits.
func (e *ctEnv) waitingRun() string {
	e.t.Helper()
	call := func(id string) string {
		return `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"` + id + `"}`
	}
	run := e.createRun(ctMain, ctJSON(map[string]any{
		"task":            map[string]any{"prompt": "Multiply, with approval."},
		"model":           map[string]any{"provider": "script", "responses": []string{call("c1"), call("c2"), `{"type":"finish","answer":"84"}`}},
		"workspace":       e.workspace(),
		"approval_policy": "always",
	}))
	e.waitStatus(ctMain, run.Id, gen.RunStatusWaitingForApproval)
	return run.Id
}

// ctToolErrors is one request per tool that the tool answers with an
// error its 422 description names. A new tool needs an entry here.
var ctToolErrors = map[string]struct {
	server string
	body   string
}{
	"calculator":  {ctMain, `{"left": 1, "operation": "divide", "right": 0}`},
	"list_files":  {ctMain, `{"path": "no/such/dir"}`},
	"read_file":   {ctMain, `{"path": "no-such-file.txt"}`},
	"search":      {ctMain, `{"pattern": "(", "regex": true}`},
	"edit_file":   {ctMain, `{"path": "README.md", "old_text": "text the file does not contain", "new_text": "x"}`},
	"write_file":  {ctMain, `{"path": "../outside.txt", "content": "x"}`},
	"apply_patch": {ctMain, `{"patch": "*** Begin Patch\n*** Update File: README.md\n@@\n-text the file does not contain\n+x\n*** End Patch\n"}`},
	"run_command": {ctNoCommands, `{"command": "echo hello"}`},
}

// ctCases is the case table: operationId → status → cases. Every tool
// operation gets its cases from its spec examples; 401 and 500 cases are
// derived from each operation's first success case.
func ctCases(e *ctEnv) map[string]map[int][]ctCase {
	t, doc := e.t, e.doc
	cases := map[string]map[int][]ctCase{}
	add := func(op string, status int, c ctCase) {
		if cases[op] == nil {
			cases[op] = map[int][]ctCase{}
		}
		cases[op][status] = append(cases[op][status], c)
	}
	fixed := func(r ctReq) func(*ctEnv) ctReq { return func(*ctEnv) ctReq { return r } }

	add("getHealth", 200, ctCase{name: "up", req: fixed(ctReq{})})
	add("getSpec", 200, ctCase{name: "the document", req: fixed(ctReq{}), check: func(t *testing.T, _ *ctEnv, body []byte) {
		if !bytes.Equal(body, spec.YAML()) {
			t.Error("GET /openapi.yaml is not the embedded spec")
		}
	}})
	add("getMetrics", 200, ctCase{name: "the metrics", req: fixed(ctReq{}), check: func(t *testing.T, _ *ctEnv, body []byte) {
		if !bytes.Contains(body, []byte(`specloop_runs_total{exit_reason="finished"} `)) {
			t.Error("GET /metrics lacks specloop_runs_total")
		}
	}})
	add("getMetrics", 404, ctCase{name: "no metrics", server: ctNoCommands, req: fixed(ctReq{})})
	add("listTools", 200, ctCase{name: "all tools", req: fixed(ctReq{}), check: func(t *testing.T, e *ctEnv, body []byte) {
		var list gen.ToolList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list.Tools {
			names = append(names, s.Name)
		}
		reg, err := tools.NewRegistry(spec.YAML())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{ctCustom}
		for _, d := range reg.Defs() {
			want = append(want, d.Spec.Name)
		}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("a server that allows commands lists %v, want the spec's tools and its custom tool: %v", names, want)
		}
		if ps := contract.CheckToolSpecs(e.doc, list.Tools); len(ps) > 0 {
			t.Errorf("listed tool specs:\n%s", contract.Format(ps))
		}
	}})

	// Runs.
	example := ctExample(t, doc, "createRun")
	add("createRun", 202, ctCase{name: "the spec's example", req: fixed(ctReq{body: example})})
	add("createRun", 400, ctCase{name: "no task", invalid: true, req: fixed(ctReq{body: []byte(`{"model": {"provider": "script", "responses": ["x"]}}`)})})
	add("createRun", 400, ctCase{name: "check without commands", server: ctNoCommands, req: fixed(ctReq{body: ctWith(example, "check", "true")})})
	add("createRun", 404, ctCase{name: "no such workspace", req: fixed(ctReq{body: ctWith(example, "workspace", "no-such-workspace")})})
	add("createRun", 413, ctCase{name: "body over the limit", req: fixed(ctReq{body: ctPad(example)})})
	add("createRun", 429, ctCase{name: "queue full", server: ctFullQueue, req: func(e *ctEnv) ctReq {
		e.fillQueue(ctFullQueue)
		return ctReq{body: example}
	}})
	add("createRun", 503, ctCase{name: "shutting down", server: ctClosed, req: fixed(ctReq{body: example})})

	add("listRuns", 200, ctCase{name: "first page", req: fixed(ctReq{})})
	add("listRuns", 200, ctCase{name: "finished, one per page", req: fixed(ctReq{query: ctQuery("status", "finished", "limit", "1")})})
	add("listRuns", 400, ctCase{name: "limit 0", invalid: true, req: fixed(ctReq{query: ctQuery("limit", "0")})})
	add("listRuns", 400, ctCase{name: "cursor the server never issued", req: fixed(ctReq{query: ctQuery("cursor", "not-a-cursor")})})

	add("getRun", 200, ctCase{name: "finished run", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.finished)} }})
	add("getRun", 400, ctCase{name: "malformed id", invalid: true, req: fixed(ctReq{params: ctRun("bad.id")})})
	add("getRun", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: ctRun("no-such-run")})})
	add("getRunTranscript", 200, ctCase{name: "finished run", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.finished)} },
		check: func(t *testing.T, _ *ctEnv, body []byte) {
			var tr gen.Transcript
			if err := json.Unmarshal(body, &tr); err != nil || len(tr.Entries) == 0 || tr.Entries[len(tr.Entries)-1].EventType != gen.TraceEventTypeRunFinished {
				t.Errorf("transcript of a finished run: %v, %s", err, body)
			}
		}})
	add("getRunTranscript", 400, ctCase{name: "negative after", invalid: true, req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), query: ctQuery("after", "-1")}
	}})
	add("getRunTranscript", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: ctRun("no-such-run")})})

	streamFrom := func(first int) func(*testing.T, *ctEnv, []byte) {
		return func(t *testing.T, _ *ctEnv, body []byte) {
			evs, err := contract.ValidateEventStream(body)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 || evs[0].ID != first || evs[len(evs)-1].Data.EventType != gen.TraceEventTypeRunFinished {
				t.Errorf("the stream of a finished run must run from event %d to run_finished, got %d events", first, len(evs))
			}
		}
	}
	add("getRunEvents", 200, ctCase{name: "whole stream", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.finished)} }, check: streamFrom(1)})
	add("getRunEvents", 200, ctCase{name: "after 1", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), query: ctQuery("after", "1")}
	}, check: streamFrom(2)})
	add("getRunEvents", 200, ctCase{name: "Last-Event-ID 2", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), header: http.Header{"Last-Event-Id": {"2"}}}
	}, check: streamFrom(3)})
	add("getRunEvents", 200, ctCase{name: "content", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), query: ctQuery("content", "true")}
	}, check: func(t *testing.T, e *ctEnv, body []byte) {
		streamFrom(1)(t, e, body)
		if !bytes.Contains(body, []byte("\nevent: "+runner.ContentEvent+"\n")) {
			t.Error("a stream with content has no transcript event")
		}
	}})
	add("getRunEvents", 400, ctCase{name: "content not a boolean", invalid: true, req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), query: ctQuery("content", "maybe")}
	}})
	add("getRunEvents", 400, ctCase{name: "Last-Event-ID seq not a number", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), query: ctQuery("content", "true"), header: http.Header{"Last-Event-Id": {"2:x"}}}
	}})
	add("getRunEvents", 400, ctCase{name: "negative after", invalid: true, req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), query: ctQuery("after", "-1")}
	}})
	add("getRunEvents", 400, ctCase{name: "Last-Event-ID not a number", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), header: http.Header{"Last-Event-Id": {"x"}}}
	}})
	add("getRunEvents", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: ctRun("no-such-run")})})
	add("getRunEvents", 429, ctCase{name: "stream cap reached", server: ctOneStream, req: func(e *ctEnv) ctReq {
		// A blocked run's stream stays open and takes the only place.
		run := e.createRun(ctOneStream, ctBlockedRun(""))
		e.openStream(ctOneStream, run.Id)
		return ctReq{params: ctRun(run.Id)}
	}})

	add("cancelRun", 202, ctCase{name: "running run", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.blocked)} }})
	add("cancelRun", 400, ctCase{name: "malformed id", invalid: true, req: fixed(ctReq{params: ctRun("bad.id")})})
	add("cancelRun", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: ctRun("no-such-run")})})
	add("cancelRun", 409, ctCase{name: "finished run", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.finished)} }})

	// Conversations: a finished run continued with a message.
	message := ctExample(t, doc, "continueRun")
	add("continueRun", 201, ctCase{name: "finished run", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finishedIn(e.workspace())), body: message}
	}, check: func(t *testing.T, _ *ctEnv, body []byte) {
		var run gen.Run
		if err := json.Unmarshal(body, &run); err != nil || run.Continues == nil || run.ConversationId != *run.Continues {
			t.Errorf("the next run = %s (%v), want it to continue the run, in the run's conversation", body, err)
		}
	}})
	add("continueRun", 400, ctCase{name: "empty message", invalid: true, req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), body: []byte(`{"message": ""}`)}
	}})
	add("continueRun", 400, ctCase{name: "white space only", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctRun(e.finished), body: []byte(`{"message": " \n\t"}`)}
	}})
	add("continueRun", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: ctRun("no-such-run"), body: message})})
	add("continueRun", 409, ctCase{name: "running run", req: func(e *ctEnv) ctReq {
		run := e.createRun(ctMain, ctBlockedRun(e.workspace()))
		e.waitStatus(ctMain, run.Id, gen.RunStatusRunning)
		return ctReq{params: ctRun(run.Id), body: message}
	}})
	add("continueRun", 409, ctCase{name: "waiting for approval", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.waitingRun()), body: message} }})
	add("continueRun", 409, ctCase{name: "continued already", req: func(e *ctEnv) ctReq {
		id := e.finishedIn(e.workspace())
		e.do(ctMain, "continueRun", ctReq{params: ctRun(id), body: message}, http.StatusCreated)
		return ctReq{params: ctRun(id), body: message}
	}})
	add("continueRun", 409, ctCase{name: "no transcript", req: func(e *ctEnv) ctReq {
		run := e.createRun(ctMain, ctWith(ctWith(example, "workspace", e.workspace()), "transcript", false))
		e.waitStatus(ctMain, run.Id, gen.RunStatusFinished)
		return ctReq{params: ctRun(run.Id), body: message}
	}})
	add("continueRun", 413, ctCase{name: "body over the limit", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.finished), body: ctPad(message)} }})
	add("continueRun", 429, ctCase{name: "queue full", server: ctFullQueue, req: func(e *ctEnv) ctReq {
		id := e.finishedOn(ctFullQueue)
		e.fillQueue(ctFullQueue)
		return ctReq{params: ctRun(id), body: message}
	}})
	add("continueRun", 503, ctCase{name: "shutting down", server: ctClosed, req: fixed(ctReq{params: ctRun("any-run"), body: message})})

	conv := func(id string) map[string]string { return map[string]string{"conversation_id": id} }
	add("getConversation", 200, ctCase{name: "a run nobody continued", req: func(e *ctEnv) ctReq { return ctReq{params: conv(e.finished)} }})
	add("getConversation", 200, ctCase{name: "two runs", req: func(e *ctEnv) ctReq {
		id := e.finishedIn(e.workspace())
		e.do(ctMain, "continueRun", ctReq{params: ctRun(id), body: message}, http.StatusCreated)
		return ctReq{params: conv(id)}
	}, check: func(t *testing.T, _ *ctEnv, body []byte) {
		var c gen.Conversation
		if err := json.Unmarshal(body, &c); err != nil || len(c.Runs) != 2 || c.Runs[0].Id != c.Id || c.Runs[1].Continues == nil || *c.Runs[1].Continues != c.Id {
			t.Errorf("conversation = %s (%v), want its first run and the run that continues it, in order", body, err)
		}
	}})
	add("getConversation", 400, ctCase{name: "malformed id", invalid: true, req: fixed(ctReq{params: conv("bad.id")})})
	add("getConversation", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: conv("no-such-run")})})

	// Approvals: runs that wait for a decision on a calculator call.
	decide := func(decision string) []byte {
		return ctJSON(map[string]any{"decision": decision, "reason": "contract"})
	}
	add("listApprovals", 200, ctCase{name: "waiting run", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.waitingRun())} },
		check: func(t *testing.T, _ *ctEnv, body []byte) {
			var list gen.ApprovalList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Approvals) != 1 || list.Approvals[0].CallId != "c1" || list.Approvals[0].Arguments["left"] != 12.0 {
				t.Errorf("approvals = %+v, want the pending call c1 with its arguments", list.Approvals)
			}
		}})
	add("listApprovals", 200, ctCase{name: "finished run", req: func(e *ctEnv) ctReq { return ctReq{params: ctRun(e.finished)} }})
	add("listApprovals", 400, ctCase{name: "malformed id", invalid: true, req: fixed(ctReq{params: ctRun("bad.id")})})
	add("listApprovals", 404, ctCase{name: "unknown id", req: fixed(ctReq{params: ctRun("no-such-run")})})
	add("decideApproval", 200, ctCase{name: "approve", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctCall(e.waitingRun(), "c1"), body: decide("approve")}
	}})
	add("decideApproval", 200, ctCase{name: "deny", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctCall(e.waitingRun(), "c1"), body: decide("deny")}
	}})
	add("decideApproval", 400, ctCase{name: "unknown decision", invalid: true, req: fixed(ctReq{params: ctCall("some-run", "c1"), body: decide("maybe")})})
	add("decideApproval", 404, ctCase{name: "unknown run", req: fixed(ctReq{params: ctCall("no-such-run", "c1"), body: decide("approve")})})
	add("decideApproval", 404, ctCase{name: "unknown call", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctCall(e.waitingRun(), "no-such-call"), body: decide("approve")}
	}})
	add("decideApproval", 409, ctCase{name: "already decided", req: func(e *ctEnv) ctReq {
		id := e.waitingRun()
		e.do(ctMain, "decideApproval", ctReq{params: ctCall(id, "c1"), body: decide("approve")}, http.StatusOK)
		return ctReq{params: ctCall(id, "c1"), body: decide("deny")}
	}})
	add("decideApproval", 409, ctCase{name: "finished run", req: func(e *ctEnv) ctReq {
		return ctReq{params: ctCall(e.finished, "c1"), body: decide("approve")}
	}})
	add("decideApproval", 413, ctCase{name: "body over the limit", req: fixed(ctReq{params: ctCall("some-run", "c1"), body: ctPad(decide("approve"))})})

	// A run this server does not know, while the engine's run index (of
	// every API server) cannot be reached: try again, not a 404.
	down := func(op string, r ctReq) {
		add(op, 503, ctCase{name: "the run index unreachable", server: ctIndexDown, req: fixed(r)})
	}
	down("listRuns", ctReq{})
	for _, op := range []string{"getRun", "getRunEvents", "getRunTranscript", "listApprovals", "cancelRun"} {
		down(op, ctReq{params: ctRun("r-elsewhere")})
	}
	down("decideApproval", ctReq{params: ctCall("r-elsewhere", "c1"), body: decide("approve")})
	down("getConversation", ctReq{params: conv("r-elsewhere")})

	// Tools: every example, and the failures every tool shares.
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range reg.Defs() {
		op := def.Spec.Name
		exs := ctExamples(t, doc, op)
		names := slices.Sorted(maps.Keys(exs))
		for _, name := range names {
			body := exs[name]
			add(op, 200, ctCase{name: "example " + name, req: func(e *ctEnv) ctReq {
				return ctReq{body: body, query: ctQuery("workspace", e.workspace())}
			}})
		}
		first := exs[names[0]]
		add(op, 400, ctCase{name: "undeclared property", invalid: true, req: fixed(ctReq{body: ctWith(first, "contract_unknown_property", 1)})})
		add(op, 404, ctCase{name: "no such workspace", req: fixed(ctReq{body: first, query: ctQuery("workspace", "no-such-workspace")})})
		add(op, 413, ctCase{name: "body over the limit", req: fixed(ctReq{body: ctPad(first)})})
		if te, ok := ctToolErrors[op]; ok {
			add(op, 422, ctCase{name: "tool error", server: te.server, req: fixed(ctReq{body: []byte(te.body)}), check: func(t *testing.T, _ *ctEnv, body []byte) {
				var p gen.Problem
				if err := json.Unmarshal(body, &p); err != nil {
					t.Fatal(err)
				}
				if p.Code == nil || !slices.Contains(def.ErrorCodes, *p.Code) {
					t.Errorf("the problem's code %v is not one the operation's x-error-codes list (%v)", p.Code, def.ErrorCodes)
				} else if p.Detail == nil || *p.Detail != p.Code.Meaning() {
					t.Errorf("the problem's detail %v is not the spec's meaning of %s", p.Detail, *p.Code)
				}
			}})
		}
	}

	// callTool: the route of every tool, here for the custom one (the spec's
	// own paths route the built-in tools to their operations above).
	forecast := func(city string) ctReq {
		return ctReq{params: map[string]string{"name": ctCustom}, body: ctJSON(map[string]any{"city": city})}
	}
	add("callTool", 200, ctCase{name: "custom tool", req: fixed(forecast("Oslo")), check: func(t *testing.T, _ *ctEnv, body []byte) {
		var res weather.GetWeatherResult
		if err := json.Unmarshal(body, &res); err != nil || res.City != "Oslo" || res.Unit != weather.UnitCelsius {
			t.Errorf("result %s, %v", body, err)
		}
	}})
	add("callTool", 400, ctCase{name: "not an object", invalid: true, req: fixed(ctReq{params: map[string]string{"name": ctCustom}, body: []byte(`[1]`)})})
	add("callTool", 400, ctCase{name: "input against the tool's schema", req: fixed(ctReq{params: map[string]string{"name": ctCustom}, body: []byte(`{}`)}),
		check: func(t *testing.T, _ *ctEnv, body []byte) {
			if p := ctProblem(t, body); p.Field == nil || *p.Field != "/city" {
				t.Errorf("problem %s does not name /city", body)
			}
		}})
	add("callTool", 404, ctCase{name: "unknown tool", req: fixed(ctReq{params: map[string]string{"name": "no_such_tool"}, body: []byte(`{}`)})})
	add("callTool", 413, ctCase{name: "body over the limit", req: fixed(ctReq{params: map[string]string{"name": ctCustom}, body: ctPad(forecast("Oslo").body)})})
	add("callTool", 422, ctCase{name: "tool error", req: fixed(forecast(ctNowhere)), check: func(t *testing.T, _ *ctEnv, body []byte) {
		if p := ctProblem(t, body); p.Code == nil || *p.Code != gen.ErrorCodeHandlerFailed {
			t.Errorf("problem %s, want code handler_failed", body)
		}
	}})

	// 401 and 500 for every operation, from its first success case: without
	// the token, and with a handler that fails.
	for _, op := range slices.Sorted(maps.Keys(cases)) {
		var ok *ctCase
		for _, status := range slices.Sorted(maps.Keys(cases[op])) {
			if status < 300 {
				c := cases[op][status][0]
				ok = &c
				break
			}
		}
		if ok == nil {
			continue
		}
		base := *ok
		if !ctPublic(doc, op) {
			add(op, 401, ctCase{name: "no token", server: base.server, invalid: true, req: func(e *ctEnv) ctReq {
				r := base.req(e)
				r.noAuth = true
				return r
			}})
		}
		// A token-less server refuses a Host that is not a loopback name:
		// what a page that rebinds its DNS name to 127.0.0.1 sends.
		add(op, 403, ctCase{name: "DNS-rebinding Host", server: ctNoToken, req: func(e *ctEnv) ctReq {
			r := base.req(e)
			r.host = "rebound.example"
			return r
		}})
		add(op, 500, ctCase{name: "handler fails", server: base.server, req: func(e *ctEnv) ctReq {
			r := base.req(e)
			r.fault = true
			return r
		}})
	}
	return cases
}

// openStream opens run id's event stream on a server and leaves it open
// until the test ends.
func (e *ctEnv) openStream(kind, id string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.server(kind).http.URL+"/v1/runs/"+id+"/events", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ctToken)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("open a stream: %d", resp.StatusCode)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
}

// ctPublic reports whether an operation needs no token (security: []).
func ctPublic(doc *openapi3.T, opID string) bool {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == opID {
				return op.Security != nil && len(*op.Security) == 0
			}
		}
	}
	return false
}

// TestContractHTTPCaseTable: an operation or a status the spec declares
// without a case is reported by name.
func TestContractHTTPCaseTable(t *testing.T) {
	t.Parallel()
	declared := []contract.Response{
		{OperationID: "getRun", Method: "GET", Path: "/v1/runs/{run_id}", Status: 200},
		{OperationID: "getRun", Method: "GET", Path: "/v1/runs/{run_id}", Status: 404},
		{OperationID: "newOperation", Method: "GET", Path: "/v1/new", Status: 200},
	}
	cases := map[string]map[int][]ctCase{
		"getRun": {200: {{name: "x"}}, 418: {{name: "teapot"}}},
	}
	got := ctMissing(declared, cases)
	want := []string{"getRun 404 (GET /v1/runs/{run_id})", "newOperation 200 (GET /v1/new)", "getRun 418, which the spec does not declare"}
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("message %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}

// The custom tool every contract server offers (tools/example/weather),
// which fails for the city ctNowhere.
const (
	ctCustom  = "get_weather"
	ctNowhere = "Nowhere"
)

func ctCustomTool(t *testing.T) *tools.Spec {
	t.Helper()
	s, err := tools.LoadSpec(weather.Spec)
	if err != nil {
		t.Fatal(err)
	}
	h := tools.Func(tools.NeedsNothing, func(_ context.Context, _ *tools.Env, in *weather.GetWeatherInput) (*weather.GetWeatherResult, error) {
		if in.City == ctNowhere {
			return nil, tools.Errorf(gen.ErrorCodeHandlerFailed, "no weather in %s", in.City)
		}
		return &weather.GetWeatherResult{City: in.City, Temperature: 21, Unit: weather.UnitCelsius}, nil
	}, func(_ *weather.GetWeatherInput, out *weather.GetWeatherResult) string { return out.City })
	if err := s.Register(h); err != nil {
		t.Fatal(err)
	}
	return s
}

func ctProblem(t *testing.T, body []byte) gen.Problem {
	t.Helper()
	var p gen.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
