package runner

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
)

// A run's spec carries the system prompt of the runner that accepted it
// (for an Engine's workers: TestEnginesSendTheServersSystemPrompt in
// package temporal), but its kept request does not: the prompt is the
// server's, copied into no record of the run, and set again from the
// runner's configuration when the run is resumed.
func TestTheSystemPromptIsTheServersNotTheRequests(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), System: "the server's prompt"})
	if err != nil {
		t.Fatal(err)
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
	if strings.Contains(string(data), "the server's prompt") {
		t.Errorf("the kept request holds the system prompt: %s", data)
	}
}
