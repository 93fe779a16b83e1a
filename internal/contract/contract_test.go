package contract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// TestErrorCodes: the codes each tool may return are spec data (the
// x-error-codes of its 422 response, members of ErrorCode), the model is told
// their meanings from ErrorCode's x-meanings (gen.ErrorCode.Meaning; the
// generator refuses a code without one), and a list naming a code the enum
// lacks stops the registry.
func TestErrorCodes(t *testing.T) {
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range reg.Defs() {
		if len(d.ErrorCodes) == 0 {
			t.Errorf("%s: lists no error codes", d.Spec.Name)
		}
		for _, c := range append(slices.Clone(d.ErrorCodes), tools.RuntimeErrorCodes...) {
			m := c.Meaning()
			if !c.Valid() || m == "" {
				t.Errorf("%s: code %s has no generated constant or no meaning", d.Spec.Name, c)
			}
			if slices.Contains(d.ErrorCodes, c) && !strings.Contains(d.Spec.ErrorDescription, string(c)+": "+m) {
				t.Errorf("%s: the model is not told that %s means %q: %q", d.Spec.Name, c, m, d.Spec.ErrorDescription)
			}
		}
	}
	calc, _ := reg.Lookup("calculator")
	if diff := cmp.Diff([]gen.ErrorCode{gen.ErrorCodeDivisionByZero, gen.ErrorCodeNonFiniteResult}, calc.ErrorCodes); diff != "" {
		t.Errorf("calculator codes (-want +got):\n%s", diff)
	}
	for name, edit := range map[string][2]string{
		"undefined code": {"x-error-codes: [division_by_zero, non_finite_result]", "x-error-codes: [division_by_zero, no_such_code]"},
		"no codes":       {"x-error-codes: [division_by_zero, non_finite_result]", "x-error-codes: []"},
	} {
		yaml := strings.Replace(string(spec.YAML()), edit[0], edit[1], 1)
		if yaml == string(spec.YAML()) {
			t.Fatalf("%s: the spec no longer has %q", name, edit[0])
		}
		if _, err := contract.ParseSpec([]byte(yaml)); err != nil {
			t.Fatal(err)
		}
		if _, err := tools.NewRegistry([]byte(yaml)); err == nil {
			t.Errorf("%s: the registry accepted the spec", name)
		}
	}
}

// loadSchema parses one component schema written in YAML.
func loadSchema(t *testing.T, name, yaml string) *openapi3.Schema {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte("openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n    " + name + ":\n" + yaml))
	if err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas[name].Value
}

func TestGenerateInputs(t *testing.T) {
	s := loadSchema(t, "In", `
      type: object
      additionalProperties: false
      required: [op, n]
      properties:
        op: {type: string, enum: [a, b]}
        n: {type: integer, minimum: 1, maximum: 10}
        name: {type: string, minLength: 2, maxLength: 3}
        flag: {type: boolean}
`)
	ins := contract.GenerateInputs(s, map[string]any{"ex": map[string]any{"op": "a", "n": 5.0, "flag": true}})
	have := map[string]bool{}
	for _, in := range ins {
		b, _ := json.Marshal(in.Args)
		have[string(b)] = true
	}
	for _, want := range []string{
		`{"flag":true,"n":5,"op":"a"}`, // the example itself
		`{"flag":true,"n":5,"op":"b"}`, // every enum value
		`{"flag":true,"n":5,"op":"contract_value_not_in_enum"}`,
		`{"flag":true,"n":1,"op":"a"}`, // minimum
		`{"flag":true,"n":0,"op":"a"}`, // one below
		`{"flag":true,"n":10,"op":"a"}`,
		`{"flag":true,"n":11,"op":"a"}`,
		`{"flag":true,"n":-1,"op":"a"}`,
		`{"flag":true,"n":2147483648,"op":"a"}`,
		`{"n":5,"op":"a"}`,                       // optional field removed
		`{"flag":false,"n":5,"op":"a"}`,          // both booleans
		`{"flag":true,"n":5,"name":"","op":"a"}`, // empty string
		`{"flag":true,"n":5,"name":"x","op":"a"}`,
		`{"flag":true,"n":5,"name":"xx","op":"a"}`,
		`{"flag":true,"n":5,"name":"xxx","op":"a"}`,
		`{"flag":true,"n":5,"name":"xxxx","op":"a"}`,
		`{"flag":true,"op":"a"}`, // required field removed
		`{"contract_unknown_property":true,"flag":true,"n":5,"op":"a"}`,
	} {
		if !have[want] {
			t.Errorf("no generated input %s", want)
		}
	}
	if len(have) != len(ins) {
		t.Errorf("%d inputs but %d distinct", len(ins), len(have))
	}
}

func TestGenerateInputsFillsRequiredFields(t *testing.T) {
	s := loadSchema(t, "In", `
      type: object
      required: [path, version]
      properties:
        path: {type: string}
        version: {type: integer, minimum: 3}
`)
	ins := contract.GenerateInputs(s, map[string]any{"ex": map[string]any{"path": "a"}})
	if !ins[0].Verbatim || len(ins[0].Args) != 1 {
		t.Fatalf("first input %+v, want the example as written", ins[0])
	}
	if got := ins[1].Args["version"]; got != 3.0 || ins[1].Verbatim {
		t.Fatalf("second input %+v, want the example with version filled with its minimum", ins[1])
	}
}

// TestRunTraceMatchesTheSpec runs the loop over the calculator with a
// script that touches every kind of event and validates the trace and the
// result against the spec.
func TestRunTraceMatchesTheSpec(t *testing.T) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		maxSteps  int
		recordRaw bool
		responses []string
	}{
		{"finished", 6, true, []string{
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"c1"}`,
			`not an action`,
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`,
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"power","right":2}}`,
			`{"type":"tool_call","tool_name":"nope","arguments":{}}`,
			`{"type":"finish","answer":"84"}`,
		}},
		{"out of steps", 1, false, []string{
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":2}}`,
		}},
		{"model error", 3, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.jsonl")
			w, err := trace.Create(path, trace.SyncNone)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := agent.Run(context.Background(), gen.Task{Prompt: "Compute 12 x 7."}, model.NewScript(tt.responses...),
				agent.Options{MaxSteps: tt.maxSteps, Tools: rt, Trace: w, RecordRaw: tt.recordRaw})
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := contract.ValidateTraceFile(path); err != nil {
				t.Error(err)
			}
			data, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if err := contract.ValidateJSON("RunResult", data); err != nil {
				t.Errorf("RunResult: %v\n%s", err, data)
			}
		})
	}
}

func TestValidateTraceFileCatches(t *testing.T) {
	ok := `{"run_id":"r","step":0,"event_type":"run_started","time":"2025-01-01T00:00:00Z","max_steps":5}` + "\n" +
		`{"run_id":"r","step":1,"event_type":"run_finished","time":"2025-01-01T00:00:01Z","exit_reason":"finished","steps_used":1}` + "\n"
	tests := []struct {
		name, content, want string
	}{
		{"valid", ok, ""},
		{"torn last line", ok + `{"run_id":"r"`, "not newline-terminated"},
		{"missing field", `{"run_id":"r","event_type":"run_started","time":"2025-01-01T00:00:00Z"}` + "\n", "line 1: does not validate against TraceEvent: /step: is required"},
		{"unknown field", strings.Replace(ok, `"max_steps":5`, `"max_steps":5,"prompt":"secret"`, 1), "line 1: does not validate"},
		{"bad enum", strings.Replace(ok, `"exit_reason":"finished"`, `"exit_reason":"done"`, 1), "line 2: does not validate against TraceEvent: /exit_reason"},
		{"not JSON", ok[:10] + "\n", "line 1: not JSON"},
		{"event after run_finished", ok + strings.SplitAfter(ok, "\n")[1], "line 3: an event follows run_finished"},
		{"two runs", ok + strings.ReplaceAll(ok, `"r"`, `"s"`), "line 3"},
		{"step goes back", strings.SplitAfter(ok, "\n")[0] + observation(2) + observation(1), "line 3: step 1 follows step 2"},
		{"first event not run_started", observation(1), "line 1: the first event is observation"},
		{"cancelled before it started", strings.SplitAfter(ok, "\n")[1], ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			err := contract.ValidateTraceFile(path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error quotes the trace: %v", err)
			}
		})
	}
}

func observation(step int) string {
	return fmt.Sprintf(`{"run_id":"r","step":%d,"event_type":"observation","time":"2025-01-01T00:00:01Z","tool_name":"calculator","is_error":false}`+"\n", step)
}

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(e)
		b.WriteString("\n\n")
	}
	return b.String()
}

func TestValidateEventStream(t *testing.T) {
	started := `{"run_id":"r","step":0,"event_type":"run_started","time":"2025-01-01T00:00:00Z"}`
	finished := `{"run_id":"r","step":1,"event_type":"run_finished","time":"2025-01-01T00:00:01Z","exit_reason":"finished","steps_used":1}`
	tests := []struct {
		name, body, want string
	}{
		{"valid", sse("id: 1\nevent: run_started\ndata: "+started, "id: 2\nevent: run_finished\ndata: "+finished), ""},
		{"resumed", sse("id: 2\nevent: run_finished\ndata: " + finished), ""},
		{"id gap", sse("id: 1\nevent: run_started\ndata: "+started, "id: 3\nevent: run_finished\ndata: "+finished), "event 2: id 3 does not follow id 1"},
		{"event name", sse("id: 1\nevent: observation\ndata: " + started), "event 1: the event name differs"},
		{"invalid data", sse("id: 1\nevent: run_started\ndata: " + strings.Replace(started, `"step":0,`, "", 1)), "event 1: does not validate against TraceEvent: /step: is required"},
		{"no id", sse("event: run_started\ndata: " + started), "id is not a positive integer"},
		{"no data", sse("id: 1\nevent: run_started"), "has no data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.ValidateEventStream([]byte(tt.body))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestHTTPCheck feeds hand-made exchanges to the validator: a response with
// an undeclared status or a body off its schema, and an event stream with
// a bad event, are all caught.
func TestHTTPCheck(t *testing.T) {
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	hv, err := contract.NewHTTP(doc)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, auth bool) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if auth {
			r.Header.Set("Authorization", "Bearer t")
		}
		return r
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	stream := http.Header{"Content-Type": {"text/event-stream"}}
	started := `{"run_id":"r","step":0,"event_type":"run_started","time":"2025-01-01T00:00:00Z"}`
	tests := []struct {
		name         string
		ex           contract.Exchange
		op           string
		request, rsp string // "" = valid, else a substring of the error
	}{
		{"health", contract.Exchange{Request: get("/healthz", false), Status: 200, Header: jsonHeader, Body: []byte(`{"status":"ok"}`)}, "getHealth", "", ""},
		{"undeclared status", contract.Exchange{Request: get("/healthz", false), Status: 418, Header: problem, Body: []byte(`{}`)}, "getHealth", "", "status is not supported"},
		{"body off schema", contract.Exchange{Request: get("/healthz", false), Status: 200, Header: jsonHeader, Body: []byte(`{"status":"fine"}`)}, "getHealth", "", "/status"},
		{"wrong content type", contract.Exchange{Request: get("/healthz", false), Status: 500, Header: jsonHeader, Body: []byte(`{}`)}, "getHealth", "", "Content-Type"},
		{"problem without title", contract.Exchange{Request: get("/v1/runs/abc", true), Status: 404, Header: problem, Body: []byte(`{"type":"about:blank","status":404}`)}, "getRun", "", "/title"},
		{"no token", contract.Exchange{Request: get("/v1/runs/abc", false), Status: 401, Header: problem, Body: []byte(`{"type":"about:blank","title":"Unauthorized","status":401}`)}, "getRun", "security", ""},
		{"bad path parameter", contract.Exchange{Request: get("/v1/runs/a.b", true), Status: 400, Header: problem, Body: []byte(`{"type":"about:blank","title":"Bad Request","status":400}`)}, "getRun", "run_id", ""},
		{"stream", contract.Exchange{Request: get("/v1/runs/abc/events", true), Status: 200, Header: stream, Body: []byte(sse("id: 1\nevent: run_started\ndata: " + started))}, "getRunEvents", "", ""},
		{"bad stream", contract.Exchange{Request: get("/v1/runs/abc/events", true), Status: 200, Header: stream, Body: []byte(sse("id: 1\nevent: run_started\ndata: {}"))}, "getRunEvents", "", "event 1"},
		{"spec as text", contract.Exchange{Request: get("/openapi.yaml", false), Status: 200, Header: http.Header{"Content-Type": {"application/yaml"}}, Body: spec.YAML()}, "getSpec", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := hv.Check(context.Background(), tt.ex)
			if err != nil {
				t.Fatal(err)
			}
			if v.OperationID != tt.op {
				t.Fatalf("routed to %q, want %q", v.OperationID, tt.op)
			}
			for _, c := range []struct {
				what string
				got  error
				want string
			}{{"request", v.Request, tt.request}, {"response", v.Response, tt.rsp}} {
				switch {
				case c.want == "" && c.got != nil:
					t.Errorf("%s: unexpected error: %v", c.what, c.got)
				case c.want != "" && (c.got == nil || !strings.Contains(c.got.Error(), c.want)):
					t.Errorf("%s: error %v, want it to mention %q", c.what, c.got, c.want)
				}
			}
		})
	}
	if _, err := hv.Check(context.Background(), contract.Exchange{Request: get("/v1/debug", true), Status: 200}); err == nil {
		t.Error("a request for an undeclared path was routed")
	}
}

// pathParam is a path template's parameter, {name}.
var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func TestCheckRoutes(t *testing.T) {
	doc := contract.MustSpec()
	var served []contract.Route
	for _, r := range contract.Responses(doc) {
		served = append(served, contract.Route{Method: r.Method, Path: pathParam.ReplaceAllString(r.Path, ":$1")})
	}
	served = slices.CompactFunc(served, func(a, b contract.Route) bool { return a == b })
	if ps := contract.CheckRoutes(doc, served); len(ps) > 0 {
		t.Fatalf("the spec's own routes:\n%s", contract.Format(ps))
	}
	// The server serves the built-in tools' paths by POST /v1/tools/:name.
	var generic []contract.Route
	for _, r := range served {
		if !strings.HasPrefix(r.Path, "/v1/tools/") || r.Path == "/v1/tools/:name" {
			generic = append(generic, r)
		}
	}
	if len(generic) == len(served) {
		t.Fatal("the spec has no concrete tool paths")
	}
	if ps := contract.CheckRoutes(doc, generic); len(ps) > 0 {
		t.Fatalf("routes with POST /v1/tools/:name for the tools:\n%s", contract.Format(ps))
	}
	var withoutGeneric []contract.Route
	for _, r := range generic {
		if r.Path != "/v1/tools/:name" {
			withoutGeneric = append(withoutGeneric, r)
		}
	}
	if got := fmt.Sprint(contract.CheckRoutes(doc, withoutGeneric)); !strings.Contains(got, "calculator: the spec declares POST /v1/tools/calculator but the server does not serve it") {
		t.Errorf("a server without the tool route: problems %s", got)
	}
	var withoutHealth []contract.Route
	for _, r := range served {
		if r.Path != "/healthz" {
			withoutHealth = append(withoutHealth, r)
		}
	}
	extra := append(withoutHealth, contract.Route{Method: "GET", Path: "/debug/pprof"}, contract.Route{Method: "HEAD", Path: "/v1/tools"})
	got := fmt.Sprint(contract.CheckRoutes(doc, extra))
	for _, want := range []string{"GET /debug/pprof: the server serves this route but the spec declares no such operation", "getHealth: the spec declares GET /healthz but the server does not serve it"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %s lack %q", got, want)
		}
	}
	if strings.Contains(got, "HEAD") {
		t.Errorf("a HEAD route was reported: %s", got)
	}
}

func TestCheckToolSpecs(t *testing.T) {
	doc := contract.MustSpec()
	rt, err := tools.New(tools.Config{Workspace: mustWorkspace(t)})
	if err != nil {
		t.Fatal(err)
	}
	if ps := contract.CheckToolSpecs(doc, rt.Specs()); len(ps) > 0 {
		t.Fatalf("model-visible tool specs:\n%s", contract.Format(ps))
	}
	bad := rt.Specs()[0]
	bad.InputSchema = map[string]any{"$ref": "#/components/schemas/CalculatorInput"}
	got := fmt.Sprint(contract.CheckToolSpecs(doc, []gen.ToolSpec{bad}))
	if !strings.Contains(got, "$ref") {
		t.Errorf("a tool spec with a $ref was not reported: %s", got)
	}
}

func mustWorkspace(t *testing.T) *tools.Workspace {
	t.Helper()
	w, err := tools.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestValidateJSON(t *testing.T) {
	if err := contract.ValidateJSON("RunResult", []byte(`{"exit_reason":"finished","steps_used":2,"answer":"84"}`)); err != nil {
		t.Fatal(err)
	}
	err := contract.ValidateJSON("RunResult", []byte(`{"exit_reason":"finished"}`))
	if err == nil || !strings.Contains(err.Error(), "/steps_used: is required") {
		t.Fatalf("error %v, want it to name /steps_used", err)
	}
}
