package tools

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
)

// TestToDataIsTheResultsJSON: the data of an Observation is what the
// result's JSON says, for every shape a result may hold: unions keep their
// member, []byte is base64 text, times are RFC 3339, omitted fields are
// absent.
func TestToDataIsTheResultsJSON(t *testing.T) {
	t.Parallel()
	var member gen.ModelConfig
	if err := member.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{"r"}}); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 30, 9, 0, 0, 5, time.UTC)
	type result struct {
		Model   gen.ModelConfig `json:"model"`
		Bytes   []byte          `json:"bytes"`
		When    time.Time       `json:"when"`
		Skipped *int            `json:"skipped,omitempty"`
		Count   int             `json:"count"`
	}
	got, err := toData(&result{Model: member, Bytes: []byte("hi"), When: when, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": map[string]any{"provider": "script", "responses": []any{"r"}},
		"bytes": "aGk=",
		"when":  "2026-11-30T09:00:00.000000005Z",
		"count": 3.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
