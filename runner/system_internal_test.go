package runner

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// A run's spec carries the system prompt and the custom tools' documents
// of the runner that accepted it (for an Engine's workers:
// TestEnginesSendTheServersSystemPrompt and
// TestEnginesOfferTheServersCustomTools in package temporal), but its kept
// request does not: they are the server's, copied into no record of the
// run, and set again from the runner's configuration when the run is
// resumed.
func TestTheSystemPromptAndToolsAreTheServersNotTheRequests(t *testing.T) {
	t.Parallel()
	doc := "openapi: 3.0.3\ninfo: {title: the server's tools, version: '1'}\npaths:\n  /v1/tools/echo:\n    post:\n      operationId: echo\n      description: Echoes.\n" +
		"      servers: [{url: 'http://127.0.0.1:1'}]\n      requestBody:\n        required: true\n        content:\n          application/json:\n            schema: {$ref: '#/components/schemas/EchoInput'}\n" +
		"      responses:\n        '200': {description: ok}\ncomponents:\n  schemas:\n    EchoInput: {type: object, properties: {text: {type: string}}}\n"
	ts, err := tools.LoadSpec([]byte(doc))
	if err == nil {
		err = ts.RegisterDeclared(tools.DeclaredConfig{})
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), System: "the server's prompt", ToolSpecs: []*tools.Spec{ts}})
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{}
	s.serversPart(&sp)
	if sp.System != "the server's prompt" || len(sp.CustomTools) != 1 || sp.CustomTools[0] != doc {
		t.Errorf("a run's spec carries the system prompt %q and the tools %q", sp.System, sp.CustomTools)
	}
	defer s.Shutdown(context.Background())
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}}
	if err := req.Model.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{`{"type":"finish","answer":"3"}`}}); err != nil {
		t.Fatal(err)
	}
	run, err := s.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.store.requestPath(run.Id))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "the server's prompt") || strings.Contains(string(data), "the server's tools") {
		t.Errorf("the kept request holds the system prompt or the custom tools: %s", data)
	}
}
