package demo_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/specloop/specloop/internal/demo"
	"github.com/specloop/specloop/model"
)

// Every scripted response is a valid action, and the script follows the
// demo's path: search, read, edit, run the tests, finish.
func TestScript(t *testing.T) {
	var steps []string
	for i, raw := range demo.Script() {
		a, err := model.ParseAction(raw)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		if a.Finish != nil {
			steps = append(steps, "finish")
			continue
		}
		steps = append(steps, a.ToolCall.ToolName)
	}
	want := []string{"search", "read_file", "edit_file", "run_command", "finish"}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	if len(want) > demo.MaxSteps {
		t.Fatalf("the budget of %d steps is too small", demo.MaxSteps)
	}
}

func TestWriteModule(t *testing.T) {
	dir := filepath.Join(t.TempDir(), demo.ModuleName)
	if err := demo.WriteModule(dir); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"go.mod", "roman.go", "roman_test.go"}; !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
}
