package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
)

// hangGuard is how long a test waits for what a hostile server would make
// hang before it fails, instead of blocking the test binary.
const hangGuard = 60 * time.Second

// rawTool is a tool offered as the server lists it: a raw input schema and
// a description.
type rawTool struct {
	name, description, schema string
}

// serveRaw serves the tools over streamable HTTP; each answers an empty
// result.
func serveRaw(t *testing.T, tools ...rawTool) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "v1"}, nil)
	for _, tl := range tools {
		srv.AddTool(&mcp.Tool{Name: tl.name, Description: tl.description, InputSchema: json.RawMessage(tl.schema)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// chainSchema is the attack of issue 20: levels definitions, each a oneOf
// of two references to the next and null, so that validating one value
// not null tries 2^levels paths.
func chainSchema(levels int) string {
	defs := make([]string, 0, levels+1)
	for i := range levels {
		defs = append(defs, fmt.Sprintf(`"d%d":{"oneOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"},{"type":"null"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, levels))
	return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}

// within runs f and fails the test if it does not return within hangGuard.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("%s did not return within %s", what, hangGuard)
		panic("unreachable")
	}
}

// A tool whose schema takes exponential time to validate a value (the
// 24-level oneOf chain, 3.5 KB) is refused at start with a message naming
// the server and the tool, instead of taking minutes and gigabytes (and
// every run of a server) on its first call.
func TestExponentialSchemaRefusedAtStart(t *testing.T) {
	t.Parallel()
	schema := chainSchema(24)
	url := serveRaw(t, rawTool{name: "chain", description: "Looks harmless.", schema: schema})
	type opened struct {
		rt  *mcpclient.Runtime
		err error
	}
	o := within(t, "Open", func() opened {
		rt, err := mcpclient.Open(context.Background(), base(t), []mcpclient.Server{{Name: "ext", URL: url}}, mcpclient.Config{})
		return opened{rt, err}
	})
	if o.err == nil {
		defer o.rt.Close()
		// Today's behaviour: the tool is offered; its first call must at
		// least come back.
		obs := within(t, "a call of ext__chain", func() gen.Observation {
			obs, _ := o.rt.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "ext__chain", Arguments: map[string]any{"x": 1.0}})
			return obs
		})
		t.Fatalf("a %d-byte exponential schema was accepted (its call gave %q)", len(schema), obs.Content)
	}
	msg := o.err.Error()
	if !strings.Contains(msg, `"ext"`) || !strings.Contains(msg, `"chain"`) || !strings.Contains(msg, "budget") {
		t.Fatalf("Open: %v; want a refusal naming the server, the tool and the budget", o.err)
	}
}

// openErr opens a runtime on one server and returns Open's error (closing
// the runtime when there is none).
func openErr(t *testing.T, servers ...mcpclient.Server) error {
	t.Helper()
	rt, err := mcpclient.Open(context.Background(), base(t), servers, mcpclient.Config{})
	if err == nil {
		rt.Close()
	}
	return err
}

func wantRefused(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal naming %q", words)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("refusal %q does not say %q", err, w)
		}
	}
}

// manyTools are n tools named t0, t1, ... of the simplest schema.
func manyTools(n int) []rawTool {
	tools := make([]rawTool, n)
	for i := range tools {
		tools[i] = rawTool{name: fmt.Sprintf("t%d", i), schema: `{"type":"object"}`}
	}
	return tools
}

// A server may offer MaxToolsPerServer tools; one that offers more is
// refused whole (which of them would the user miss?), saying so.
func TestToolsPerServerCap(t *testing.T) {
	t.Parallel()
	if err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, manyTools(mcpclient.MaxToolsPerServer)...)}); err != nil {
		t.Fatalf("%d tools: %v", mcpclient.MaxToolsPerServer, err)
	}
	err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, manyTools(mcpclient.MaxToolsPerServer+1)...)})
	wantRefused(t, err, `"ext"`, fmt.Sprintf("more than %d tools", mcpclient.MaxToolsPerServer))
}

// A run takes at most MaxTools MCP tools from all its servers together.
func TestToolsInAllCap(t *testing.T) {
	t.Parallel()
	full := serveRaw(t, manyTools(mcpclient.MaxToolsPerServer)...)
	servers := make([]mcpclient.Server, mcpclient.MaxTools/mcpclient.MaxToolsPerServer)
	for i := range servers {
		servers[i] = mcpclient.Server{Name: fmt.Sprintf("s%d", i), URL: full}
	}
	if err := openErr(t, servers...); err != nil {
		t.Fatalf("%d tools in all: %v", mcpclient.MaxTools, err)
	}
	servers = append(servers, mcpclient.Server{Name: "one", URL: serveRaw(t, manyTools(1)...)})
	wantRefused(t, openErr(t, servers...), fmt.Sprintf("%d tools in all", mcpclient.MaxTools+1), fmt.Sprint(mcpclient.MaxTools))
}

// A description of MaxDescriptionBytes is offered whole; a longer one is
// clipped with a marker the model sees, and the session warns once,
// naming the server and the tool.
func TestDescriptionCap(t *testing.T) {
	t.Parallel()
	atCap := strings.Repeat("d", mcpclient.MaxDescriptionBytes)
	over := strings.Repeat("é", mcpclient.MaxDescriptionBytes) // twice the cap in bytes
	url := serveRaw(t,
		rawTool{name: "fits", description: atCap, schema: `{"type":"object"}`},
		rawTool{name: "long", description: over, schema: `{"type":"object"}`},
		rawTool{name: "longer", description: over + over, schema: `{"type":"object"}`})
	var stderr strings.Builder
	s, err := mcpclient.Connect(context.Background(), mcpclient.Server{Name: "ext", URL: url}, mcpclient.Config{Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	descs := map[string]string{}
	for _, spec := range s.Specs() {
		descs[spec.Name] = spec.Description
	}
	if descs["ext__fits"] != atCap {
		t.Errorf("a description of %d bytes was changed", len(atCap))
	}
	long := descs["ext__long"]
	if !strings.HasPrefix(long, over[:mcpclient.MaxDescriptionBytes]) || len(long) > mcpclient.MaxDescriptionBytes+100 ||
		!strings.Contains(long, fmt.Sprintf("clipped by specloop: the server's was %d bytes", len(over))) {
		t.Errorf("a %d-byte description became %d bytes ending %q", len(over), len(long), long[max(0, len(long)-80):])
	}
	if w := stderr.String(); strings.Count(w, "warning") != 1 || !strings.Contains(w, `"ext"`) || !strings.Contains(w, "long, longer") || strings.Contains(w, "fits") {
		t.Errorf("stderr %q; want one warning naming the server and both clipped tools", w)
	}
}

// paddedSchema is an object schema whose compact JSON (as the client
// re-encodes it, keys sorted) is exactly n bytes.
func paddedSchema(n int) string {
	const frame = `{"description":"","type":"object"}`
	return `{"description":"` + strings.Repeat("x", n-len(frame)) + `","type":"object"}`
}

// nestedSchema is an object schema whose JSON nests depth levels: a chain
// of not.
func nestedSchema(depth int) string {
	return `{"type":"object"` + strings.Repeat(`,"not":{"type":"string"`, depth-1) + strings.Repeat("}", depth)
}

// The size and depth of a schema are capped before it is compiled.
func TestSchemaSizeAndDepthCaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		fits, not string
		want      string
	}{
		{"size", paddedSchema(mcpclient.MaxSchemaBytes), paddedSchema(mcpclient.MaxSchemaBytes + 1), fmt.Sprintf("over the %d KiB", mcpclient.MaxSchemaBytes>>10)},
		{"depth", nestedSchema(mcpclient.MaxSchemaDepth), nestedSchema(mcpclient.MaxSchemaDepth + 1), fmt.Sprintf("deeper than %d levels", mcpclient.MaxSchemaDepth)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "fits", schema: tc.fits})}); err != nil {
				t.Fatalf("at the cap: %v", err)
			}
			err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "over", schema: tc.not})})
			wantRefused(t, err, `"ext"`, `"over"`, "input schema", tc.want)
		})
	}
}

// anyOfSchema is an object schema that costs exactly cost to validate a
// value with: itself and cost-1 empty branches.
func anyOfSchema(cost int) string {
	return `{"type":"object","anyOf":[` + strings.Repeat(`{},`, cost-2) + `{}]}`
}

// A schema that costs MaxSchemaCost is accepted, one more is refused; so
// is the chain at the first length over the budget, and the one below it
// is offered and checks a call.
func TestSchemaCostBudget(t *testing.T) {
	t.Parallel()
	if err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "fits", schema: anyOfSchema(mcpclient.MaxSchemaCost)})}); err != nil {
		t.Fatalf("at the budget: %v", err)
	}
	err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "over", schema: anyOfSchema(mcpclient.MaxSchemaCost + 1)})})
	wantRefused(t, err, `"ext"`, `"over"`, "budget")

	// The chain of n levels costs 5*2^n-3 (each level: itself, two
	// references, null and twice the next): 10 levels are under the
	// budget, 11 over.
	wantRefused(t, openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "chain", schema: chainSchema(11)})}), `"chain"`, "budget")
	rt := open(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "chain", schema: chainSchema(10)})}, mcpclient.Config{})
	obs := within(t, "a call of the 10-level chain", func() gen.Observation { return call(t, rt, "ext__chain", map[string]any{"x": 1.0}) })
	wantCode(t, obs, gen.ErrorCodeInvalidArguments)
}

// A server's tools may add MaxServerBytes to every model request, not
// more: 16 schemas of 64 KiB fit, one more tool does not.
func TestServerBytesCap(t *testing.T) {
	t.Parallel()
	n := mcpclient.MaxServerBytes / mcpclient.MaxSchemaBytes
	tools := make([]rawTool, n, n+1)
	for i := range tools {
		tools[i] = rawTool{name: fmt.Sprintf("t%d", i), schema: paddedSchema(mcpclient.MaxSchemaBytes)}
	}
	if err := openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, tools...)}); err != nil {
		t.Fatalf("%d bytes of tools: %v", mcpclient.MaxServerBytes, err)
	}
	tools = append(tools, rawTool{name: "last", description: "d", schema: `{"type":"object"}`})
	wantRefused(t, openErr(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, tools...)}), `"ext"`, fmt.Sprintf("more than %d MiB", mcpclient.MaxServerBytes>>20))
}

// The budget bounds the checks of one place; MaxValidationWork bounds
// them in all: with a schema of cost 1,000 a value, arguments of 1,000
// values are checked, of 1,001 refused before validation (each would
// otherwise take its share of a second).
func TestValidationWorkCap(t *testing.T) {
	t.Parallel()
	const cost = 1000
	schema := `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[` + strings.Repeat(`{},`, cost-2) + `{}]}}}}`
	rt := open(t, mcpclient.Server{Name: "ext", URL: serveRaw(t, rawTool{name: "list", schema: schema})}, mcpclient.Config{})
	items := func(n int) map[string]any { return map[string]any{"a": make([]any, n)} }
	limit := mcpclient.MaxValidationWork / cost // values: the object, the array, its items
	if obs := call(t, rt, "ext__list", items(limit-2)); obs.IsError {
		t.Fatalf("%d values: %q", limit, obs.Content)
	}
	obs := call(t, rt, "ext__list", items(limit-1))
	wantCode(t, obs, gen.ErrorCodeInvalidArguments)
	if !strings.Contains(obs.Content, fmt.Sprintf("more than %d values", limit)) {
		t.Fatalf("%d values: %q; want a message saying how many values the tool takes", limit+1, obs.Content)
	}
}

// A structured result is bounded like arguments: one with more values than
// the output schema's cost allows checking is a broken protocol, not a
// long validation.
func TestResultValidationWorkCap(t *testing.T) {
	t.Parallel()
	const cost = 1000
	out := `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[` + strings.Repeat(`{},`, cost-2) + `{}]}}}}`
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(out)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"a": make([]any, mcpclient.MaxValidationWork/cost)}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	rt := open(t, mcpclient.Server{Name: "ext", URL: ts.URL}, mcpclient.Config{})
	obs := call(t, rt, "ext__big", nil)
	wantCode(t, obs, gen.ErrorCodeMcpUnavailable)
	if !strings.Contains(obs.Content, "more than") || !strings.Contains(obs.Content, "values") {
		t.Fatalf("%q; want a message saying the result holds too many values", obs.Content)
	}
}
