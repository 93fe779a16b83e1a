package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/spec"
)

// specIntDefault reads a default from a fresh parse of the spec.
func specIntDefault(t *testing.T, schema, prop string) int {
	t.Helper()
	doc, err := oas.Parse(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := doc.Schemas[schema]["properties"].(map[string]any)[prop].(map[string]any)
	if p["default"] == nil {
		t.Fatalf("%s.%s has no default in the spec", schema, prop)
	}
	return int(p["default"].(float64))
}

// A call that leaves limit out gets the spec's default number of paths and
// matches: one more than the default is cut to exactly the default.
func TestLimitsDefaultToTheSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	listLimit := specIntDefault(t, "ListFilesInput", "limit")
	for i := range listLimit + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	searchLimit := specIntDefault(t, "SearchInput", "limit")
	if err := os.WriteFile(filepath.Join(dir, "lines.txt"), []byte(strings.Repeat("needle\n", searchLimit+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := wsRuntime(t, dir)

	obs := mustSucceed(t, callTool(t, rt, "list_files", map[string]any{}))
	if n := len((*obs.Data)["files"].([]any)); n != listLimit || (*obs.Data)["truncated"] != true {
		t.Errorf("list_files without limit: %d files, truncated %v; want the spec's default %d, truncated", n, (*obs.Data)["truncated"], listLimit)
	}
	obs = mustSucceed(t, callTool(t, rt, "search", map[string]any{"pattern": "needle", "path": "lines.txt"}))
	if n := len((*obs.Data)["matches"].([]any)); n != searchLimit || (*obs.Data)["truncated"] != true {
		t.Errorf("search without limit: %d matches, truncated %v; want the spec's default %d, truncated", n, (*obs.Data)["truncated"], searchLimit)
	}
}
