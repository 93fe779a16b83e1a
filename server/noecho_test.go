package server_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/tools"
)

// markerForms are the shapes a submitted string takes to reach each
// failure of the tools: a missing path, a path outside the workspace, one
// under a file, inside .git, too long, with a control character; a
// malformed glob; an invalid or oversized regular expression; a name, a
// path or a value over its length limit. %s is the marker.
var markerForms = []string{
	"%s",
	"../%s",
	"/%s",
	"a.txt/%s",
	".git/%s",
	"d/%s",
	"%s\n",
	"%s\\",
	"[%s",
	"(%s",
	"%s)",
	"%s{1000}{1000}",
	"%s*",
	"**/%s",
	"README.md/../../%s",
	strings.Repeat("%s", 20),   // a name over 255 bytes
	strings.Repeat("%s/", 300), // a path over 4096 bytes
	strings.Repeat("%s", 5000), // over the schema's maxLength
	"%s\x00",                   // NUL
}

// shape puts the marker m in a form.
func shape(form, m string) string {
	return strings.ReplaceAll(form, "%s", m)
}

// A problem never repeats what the client sent: every string field of
// every tool's input (the fields are read from the spec), and the
// workspace parameter, gets a random marker in each of the shapes above,
// alone and in random combinations over the spec's examples; no error
// response may contain the marker. The tool's message to a model quotes the
// path or pattern it gave; the problem names the code and its meaning only.
func TestToolProblemsNeverEchoSubmittedValues(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, content := range map[string]string{"a.txt": "alpha\n", "README.md": "hello\nhello\n", "d/b.txt": "beta\n", "notes/x": "x\n"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, server.Config{Config: runner.Config{WorkspaceRoot: root}})
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := contract.Spec()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 5))
	marker := func() string { return fmt.Sprintf("zqmark%08x", rng.Uint32()) }

	calls, failures := 0, 0
	reached := map[string]bool{}
	send := func(t *testing.T, tool string, body map[string]any, query url.Values, mark string) {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		target := "/v1/tools/" + tool
		if len(query) > 0 {
			target += "?" + query.Encode()
		}
		status, _, data := ts.do(http.MethodPost, target, "application/json", strings.NewReader(string(b)))
		calls++
		if status >= 500 {
			t.Fatalf("%s %s: status %d: %s", tool, b, status, data)
		}
		if status < 400 {
			return // a result may hold what was sent (a diff, a file's lines)
		}
		failures++
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(data, &p)
		reached[fmt.Sprint(status, " ", p.Code)] = true
		if strings.Contains(strings.ToLower(string(data)), mark) {
			t.Errorf("%s %s: the %d problem echoes the submitted value: %s", tool, b, status, data)
		}
	}

	for _, def := range rt.Registry().Defs() {
		name := def.Spec.Name
		input := doc.Components.Schemas[def.InputSchemaName].Value
		var fields []string
		for f, ref := range input.Properties {
			if ref.Value.Type.Is(openapi3.TypeString) && len(ref.Value.Enum) == 0 {
				fields = append(fields, f)
			}
		}
		slices.Sort(fields)
		bases := toolExamples(t, doc, name)
		t.Run(name, func(t *testing.T) {
			// Each field, each shape, over each example.
			for _, base := range bases {
				for _, f := range fields {
					for _, form := range markerForms {
						m := marker()
						body := clone(base)
						body[f] = shape(form, m)
						send(t, name, body, nil, m)
					}
				}
				// An unknown property and a workspace named by the marker.
				m := marker()
				body := clone(base)
				body[m] = "x"
				send(t, name, body, nil, m)
				for _, form := range markerForms {
					m := marker()
					send(t, name, clone(base), url.Values{"workspace": {shape(form, m)}}, m)
				}
			}
			// Random combinations: every string field a marker shape or
			// its example value, booleans at random.
			for range 40 {
				m := marker()
				body := clone(bases[rng.IntN(len(bases))])
				for _, f := range fields {
					if rng.IntN(3) > 0 {
						body[f] = shape(markerForms[rng.IntN(len(markerForms))], m)
					}
				}
				for f, ref := range input.Properties {
					if ref.Value.Type.Is(openapi3.TypeBoolean) {
						body[f] = rng.IntN(2) == 0
					}
				}
				send(t, name, body, nil, m)
			}
		})
	}
	if failures < calls/2 {
		t.Fatalf("only %d of %d calls failed: the shapes no longer reach the tools' errors", failures, calls)
	}
	for _, want := range []string{"400 ", "404 ", "422 not_found", "422 outside_workspace", "422 invalid_glob", "422 invalid_regex", "422 invalid_path", "422 protected_path", "422 not_a_regular_file", "422 no_match", "422 multiple_matches", "422 commands_disabled"} {
		if !reached[want] {
			t.Errorf("no call got %q: the shapes no longer reach it (reached: %v)", want, slices.Sorted(maps.Keys(reached)))
		}
	}
}

// toolExamples returns the request examples the spec gives a tool.
func toolExamples(t *testing.T, doc *openapi3.T, tool string) []map[string]any {
	t.Helper()
	item := doc.Paths.Find("/v1/tools/" + tool)
	if item == nil || item.Post == nil || item.Post.RequestBody == nil {
		t.Fatalf("the spec has no POST /v1/tools/%s with a body", tool)
	}
	mt := item.Post.RequestBody.Value.Content.Get("application/json")
	var out []map[string]any
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range mt.Examples {
			if !yield(k) {
				return
			}
		}
	}) {
		v, ok := mt.Examples[k].Value.Value.(map[string]any)
		if !ok {
			t.Fatalf("%s example %s is not an object", tool, k)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("the spec gives %s no example", tool)
	}
	return out
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
