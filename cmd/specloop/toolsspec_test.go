package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shoutDoc is a tools document with one tool, shout, handled as handler
// says (an x-specloop-argv or a servers line, indented for the
// operation).
func shoutDoc(handler string) string {
	return `openapi: 3.0.3
info: {title: shout, version: "1"}
paths:
  /v1/tools/shout:
    post:
      operationId: shout
      description: Returns the text in capitals.
` + handler + `
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: "#/components/schemas/ShoutInput"
      responses:
        "200":
          description: The text in capitals.
components:
  schemas:
    ShoutInput:
      type: object
      additionalProperties: false
      required: [text]
      properties:
        text: {type: string, minLength: 1}
`
}

// writeTemp writes content to a new file named name in a temporary
// directory and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A scripted run calls a --tools-spec tool: its arguments are validated
// against the document's schema, the command gets them on stdin and its
// output is the observation.
func TestRunToolsSpecCommand(t *testing.T) {
	doc := writeTemp(t, "shout.yaml", shoutDoc(`      x-specloop-argv: [/bin/sh, -c, "tr a-z A-Z"]`))
	script := writeTemp(t, "run.script", `{"type":"tool_call","tool_name":"shout","arguments":{"text":""}}`+"\n"+
		`{"type":"tool_call","tool_name":"shout","arguments":{"text":"hello"}}`+"\n"+
		`{"type":"finish","answer":"done"}`+"\n")
	code, stdout, stderr := specloop(t, "run", "--script", script, "--tools-spec", doc, "--workspace", t.TempDir(), "shout hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		`✗ shout: error: invalid arguments for shout: field "/text": must be at least 1 characters long`,
		`← shout: {"TEXT":"HELLO"}`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the run's output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestToolsSpecRefusedAtStart(t *testing.T) {
	script := writeTemp(t, "run.script", `{"type":"finish","answer":"done"}`+"\n")
	broken := writeTemp(t, "broken.yaml", strings.Replace(shoutDoc(`      x-specloop-argv: [cat]`), `$ref: "#/components/schemas/ShoutInput"`, `$ref: "#/components/schemas/Missing"`, 1))
	command := writeTemp(t, "command.yaml", shoutDoc(`      x-specloop-argv: [cat]`))
	undeclared := writeTemp(t, "undeclared.yaml", shoutDoc(""))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"run: a $ref to nowhere", []string{"run", "--script", script, "--tools-spec", broken, "p"},
			`--tools-spec ` + broken + `: tools: custom spec: tool "shout": $ref "#/components/schemas/Missing" points to nothing`},
		{"run: no handler declared", []string{"run", "--script", script, "--tools-spec", undeclared, "p"}, `custom tool "shout": has no handler`},
		{"run: the argv's old key", []string{"run", "--script", script, "--tools-spec", writeTemp(t, "old.yaml", shoutDoc(`      x-specloop-command: [cat]`)), "p"},
			`custom tool "shout": declares x-specloop-command, which is now x-specloop-argv`},
		{"run: a missing file", []string{"run", "--script", script, "--tools-spec", "no-such.yaml", "p"}, "--tools-spec: open no-such.yaml"},
		{"run: a command without commands", []string{"run", "--script", script, "--no-commands", "--tools-spec", command, "--workspace", t.TempDir(), "p"},
			`run: --tools-spec: tools: custom tool "shout" runs a command, and this runtime offers no commands (commands are disabled)`},
		{"run: a clash with a built-in", []string{"run", "--script", script, "--tools-spec", writeTemp(t, "clash.yaml", strings.ReplaceAll(shoutDoc(`      x-specloop-argv: [cat]`), "shout", "read_file")), "--workspace", t.TempDir(), "p"},
			`custom tool "read_file" clashes with the built-in tool`},
		{"run: remote", []string{"run", "--script", script, "--remote", "http://127.0.0.1:1", "--tools-spec", command, "p"}, "--tools-spec applies to local runs"},
		{"serve: a command without --allow-commands", []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", t.TempDir(), "--tools-spec", command},
			`serve: --tools-spec: tools: custom tool "shout" runs a command`},
		{"serve: a broken document", []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", t.TempDir(), "--tools-spec", broken},
			"points to nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := specloop(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// `specloop serve --tools-spec` offers an endpoint-backed tool to runs
// and serves it at POST /v1/tools/{name}.
func TestServeToolsSpecEndpoint(t *testing.T) {
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(strings.ToUpper(string(body))))
	}))
	defer endpoint.Close()
	doc := writeTemp(t, "shout.yaml", shoutDoc(fmt.Sprintf("      servers: [{url: %q}]", endpoint.URL)))
	url, _ := startServe(t, "--tools-spec", doc)
	resp, err := http.Get(url + "/v1/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range list.Tools {
		found = found || tool.Name == "shout" && tool.Description == "Returns the text in capitals."
	}
	if !found {
		t.Fatalf("the server does not offer shout: %+v", list.Tools)
	}
	// And calls it directly, like a built-in tool.
	resp, err = http.Post(url+"/v1/tools/shout", "application/json", strings.NewReader(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != `{"TEXT":"HI"}`+"\n" {
		t.Errorf("POST /v1/tools/shout: %d %s", resp.StatusCode, body)
	}
}
