package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/tools"
)

// costOf compiles a raw schema as a tool's input schema and returns its
// cost.
func costOf(t *testing.T, schema string) (uint64, bool, error) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		t.Fatal(err)
	}
	vd, _, err := compile("ext__t", "input", v)
	if err != nil {
		return 0, false, err
	}
	cost, deep, err := schemaCost(vd.root)
	return cost[0], deep, err
}

// The cost counts checks per place of the value: recursion that descends
// (trees, expressions, lists) costs what one level costs, so the schemas
// of real tools pass; branches that check one place again multiply.
func TestSchemaCost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema string
		cost   uint64 // 0: over the budget
		deep   bool
		err    string
	}{
		{"flat", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, 1, false, ""},
		{"anyOf", `{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`, 5, false, ""}, // each branch: itself and its required name
		{"ref shared by properties", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, 2, false, ""},
		{"binary tree", `{"type":"object","properties":{"root":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"left":{"$ref":"#/$defs/n"},"right":{"$ref":"#/$defs/n"}}}}}`, 2, false, ""},
		{"expression", `{"type":"object","properties":{"e":{"$ref":"#/$defs/e"}},"$defs":{"e":{"anyOf":[
			{"type":"object","properties":{"and":{"type":"array","items":{"$ref":"#/$defs/e"}}}},
			{"type":"object","properties":{"or":{"type":"array","items":{"$ref":"#/$defs/e"}}}},
			{"type":"object","properties":{"not":{"$ref":"#/$defs/e"}}},
			{"type":"string"}]}}}`, 6, false, ""},
		// Two branches descending into the same property: 2 per level.
		{"doubling recursion", `{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"anyOf":[
			{"properties":{"a":{"$ref":"#/$defs/n"}}},{"properties":{"a":{"$ref":"#/$defs/n"}}}]}}}`, 0, true, ""},
		// A pattern applies to every property, named ones included.
		{"patterns add to names", `{"type":"object","properties":{"a":{"anyOf":[{},{}]}},"patternProperties":{"^a":{"anyOf":[{},{}]}}}`, 6, false, ""},
		// Recursion where a second schema joins at each level: its count
		// per place grows by one a level, so the cost holds only for
		// MaxArgumentDepth levels (deep): 5 checks at the first level (the
		// anyOf, two references, their targets), 2 more (a reference to m
		// and m) each level below, 131 at the 64th.
		{"growing", linearRaw, 131, true, ""},
		// As pydantic writes optional fields: anyOf [$ref, null].
		{"optional refs", `{"type":"object","properties":{"user":{"anyOf":[{"$ref":"#/$defs/User"},{"type":"null"}]},
			"tags":{"type":"array","items":{"$ref":"#/$defs/Tag"}}},"$defs":{
			"User":{"type":"object","properties":{"name":{"type":"string"},"manager":{"anyOf":[{"$ref":"#/$defs/User"},{"type":"null"}]}}},
			"Tag":{"type":"object","properties":{"k":{"type":"string"}}}}}`, 4, false, ""},
		{"chain", chainRaw(24), 0, false, ""},
		{"self", `{"type":"object","$defs":{"x":{"anyOf":[{"$ref":"#/$defs/x"}]}},"properties":{"a":{"$ref":"#/$defs/x"}}}`, 0, false, "refers to itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cost, deep, err := costOf(t, tc.schema)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("cost %d, error %v; want an error saying %q", cost, err, tc.err)
				}
				return
			}
			if tc.cost == 0 {
				if err == nil {
					t.Fatalf("cost %d accepted; want over the budget", cost)
				}
				if !strings.Contains(err.Error(), "budget") {
					t.Fatalf("error %v; want over the budget", err)
				}
				return
			}
			if err != nil || cost != tc.cost || deep != tc.deep {
				t.Fatalf("cost %d, deep %v, error %v; want %d, %v", cost, deep, err, tc.cost, tc.deep)
			}
		})
	}
}

const linearRaw = `{"type":"object","properties":{"a":{"anyOf":[{"$ref":"#"},{"$ref":"#/$defs/m"}]}},"$defs":{"m":{"properties":{"a":{"$ref":"#/$defs/m"}}}}}`

func chainRaw(levels int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range levels {
		b.WriteString(`"d` + itoa(i) + `":{"oneOf":[{"$ref":"#/$defs/d` + itoa(i+1) + `"},{"$ref":"#/$defs/d` + itoa(i+1) + `"},{"type":"null"}]},`)
	}
	b.WriteString(`"d` + itoa(levels) + `":{"type":"string"}}}`)
	return b.String()
}

func itoa(i int) string { return jsonNumber(i) }

func jsonNumber(i int) string { b, _ := json.Marshal(i); return string(b) }

// nest is a value nesting depth levels: {"left":{"left":...}}.
func nest(depth int) any {
	var v any = "leaf"
	for range depth {
		v = map[string]any{"left": v}
	}
	return v
}

// A schema whose cost grows with depth holds for values nesting
// MaxArgumentDepth levels: deeper arguments are refused before they are
// validated; for other schemas (plain recursion included) depth costs
// nothing more and is not refused.
func TestDeepArgumentsOfRecursiveSchemas(t *testing.T) {
	t.Parallel()
	tree := strings.ReplaceAll(linearRaw, `"a"`, `"left"`)
	flat := `{"type":"object","properties":{"left":{"$ref":"#/$defs/n"}},"$defs":{"n":{"properties":{"left":{"$ref":"#/$defs/n"}}}}}`
	for _, tc := range []struct {
		schema string
		depth  int
		ok     bool
	}{
		{tree, MaxArgumentDepth, true},
		{tree, MaxArgumentDepth + 1, false},
		{flat, MaxArgumentDepth + 10, true},
	} {
		var v any
		json.Unmarshal([]byte(tc.schema), &v)
		vd, _, err := compile("ext__t", "input", v)
		if err != nil {
			t.Fatal(err)
		}
		err = vd.validate(context.Background(), nest(tc.depth))
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, errTooDeep)) {
			t.Errorf("schema %s, depth %d: %v", tc.schema, tc.depth, err)
		}
	}
}

// A validation that runs long returns when the run is cancelled, as an
// error Observation with code cancelled, and the server never sees the
// call.
func TestValidationStopsWhenCancelled(t *testing.T) {
	// Not parallel: it replaces the package's runValidate.
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	old := runValidate
	runValidate = func(s *schema.Validator, v any) error {
		close(started)
		<-release
		return nil
	}
	defer func() { runValidate = old }()
	var v any
	json.Unmarshal([]byte(`{"type":"object"}`), &v)
	vd, spec, err := compile("ext__t", "input", v)
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{server: Server{Name: "ext"}, ended: make(chan struct{})}
	tl := &tool{session: s, name: "t", input: vd, spec: gen.ToolSpec{Name: "ext__t", InputSchema: spec}}
	rt := &Runtime{base: emptyRuntime{}, tools: map[string]*tool{"ext__t": tl}, builtin: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	done := make(chan gen.Observation, 1)
	go func() {
		obs, _ := rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "ext__t", Arguments: map[string]any{}})
		done <- obs
	}()
	select {
	case obs := <-done:
		if !obs.IsError || obs.ErrorCode == nil || *obs.ErrorCode != gen.ErrorCodeCancelled {
			t.Fatalf("observation %+v, want cancelled", obs)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not return when the run was cancelled")
	}
}

type emptyRuntime struct{}

func (emptyRuntime) Specs() []gen.ToolSpec { return nil }
func (emptyRuntime) Call(context.Context, *gen.ToolCall) (gen.Observation, error) {
	return gen.Observation{}, errors.New("no tools")
}

// FuzzSchemaCost: whatever a server offers as a schema, bounding it ends,
// quickly, without a panic; what it accepts validates a few values.
func FuzzSchemaCost(f *testing.F) {
	for _, s := range []string{
		`{"type":"object"}`,
		chainRaw(24),
		`{"type":"object","properties":{"left":{"$ref":"#"}}}`,
		`{"$defs":{"a":{"$dynamicAnchor":"m","anyOf":[{"$dynamicRef":"#m"}]}},"$ref":"#/$defs/a"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"items":[{"$ref":"#/definitions/a"}],"additionalItems":{"$ref":"#"}}},"dependencies":{"x":{"$ref":"#/definitions/a"}}}`,
		`{"$recursiveAnchor":true,"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"a":{"$recursiveRef":"#"}}}`,
		`{"allOf":[{"$ref":"#/$defs/x"},{"$ref":"#/$defs/x"}],"$defs":{"x":{"patternProperties":{".":{"$ref":"#"}},"unevaluatedProperties":{"$ref":"#/$defs/x"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		vd, _, err := compile("ext__t", "input", v)
		if err != nil {
			return
		}
		for _, x := range []any{nil, 1.0, "s", map[string]any{"a": []any{1.0, map[string]any{"b": nil}}}, nest(8)} {
			_ = vd.validate(context.Background(), x)
		}
	})
}

// The schemas of specloop's own tools, real schemas with $ref, oneOf and
// enums, are well within the bounds.
func TestOwnSchemasWithinBounds(t *testing.T) {
	t.Parallel()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range rt.Registry().Defs() {
		schemas := map[string]any{"input": spec.Spec.InputSchema}
		if spec.Spec.ResultSchema != nil {
			schemas["output"] = *spec.Spec.ResultSchema
		}
		for which, s := range schemas {
			vd, _, err := compile(spec.Spec.Name, which, s)
			if err != nil {
				t.Fatalf("%s %s schema: %v", spec.Spec.Name, which, err)
			}
			cost, _, _ := schemaCost(vd.root)
			if cost[0] > MaxSchemaCost/100 {
				t.Errorf("%s %s schema costs %d, more than a hundredth of the budget", spec.Spec.Name, which, cost[0])
			}
			t.Logf("%s %s: %d bytes, cost %d", spec.Spec.Name, which, vd.size, cost[0])
		}
	}
}
