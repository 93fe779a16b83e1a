package agent

import (
	"testing"

	"github.com/specloop/specloop/gen"
)

// Two calls share a signature exactly when their tool and arguments are
// equal as JSON values: key order does not matter, and no two different
// arguments (nested, of other types, or strings that join alike) collide.
func TestCallSignatureIsJSONEquality(t *testing.T) {
	d := newStuckDetector(StuckDetection{})
	sig := func(tool string, args map[string]any) [32]byte {
		return d.callSignature(&gen.ToolCall{ToolName: tool, Arguments: args})
	}
	base := map[string]any{"a": "x", "b": []any{1.0, true, nil, map[string]any{"k": "v", "j": 2.5}}}
	same := map[string]any{"b": []any{1.0, true, nil, map[string]any{"j": 2.5, "k": "v"}}, "a": "x"}
	if sig("t", base) != sig("t", same) {
		t.Fatal("equal arguments in another key order got different signatures")
	}
	for name, other := range map[string]map[string]any{
		"nested value":     {"a": "x", "b": []any{1.0, true, nil, map[string]any{"k": "v", "j": 2.6}}},
		"type":             {"a": "x", "b": []any{"1", true, nil, map[string]any{"k": "v", "j": 2.5}}},
		"strings joined":   {"a": "xb", "": []any{1.0, true, nil, map[string]any{"k": "v", "j": 2.5}}},
		"list boundary":    {"a": "x", "b": []any{1.0, true, nil}},
		"null and missing": {"a": "x"},
	} {
		if sig("t", base) == sig("t", other) {
			t.Errorf("%s: different arguments got the same signature", name)
		}
	}
	if sig("t", base) == sig("u", base) {
		t.Error("calls of different tools got the same signature")
	}
}

// A result's signature leaves out durations (keys ending in _ms).
func TestResultSignatureIgnoresDurations(t *testing.T) {
	d := newStuckDetector(StuckDetection{})
	obs := func(data map[string]any) *gen.Observation {
		return &gen.Observation{ToolName: "run_command", Content: "ok", Data: &data}
	}
	a := d.resultSignature(obs(map[string]any{"exit_code": 0.0, "duration_ms": 12.0}))
	if b := d.resultSignature(obs(map[string]any{"exit_code": 0.0, "duration_ms": 40.0})); a != b {
		t.Fatal("results differing only in duration_ms got different signatures")
	}
	if b := d.resultSignature(obs(map[string]any{"exit_code": 1.0, "duration_ms": 12.0})); a == b {
		t.Fatal("results with different exit codes got the same signature")
	}
}
