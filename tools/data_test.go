package tools

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
)

// TestToDataMatchesEncodingJSON: the fast conversion gives exactly what a
// JSON round trip gives, for every result type of the spec.
func TestToDataMatchesEncodingJSON(t *testing.T) {
	one, n := 1, 3
	when := time.Date(2026, 11, 30, 9, 0, 0, 5, time.UTC)
	values := []any{
		&gen.CalculatorResult{Value: 84},
		&gen.ListFilesResult{Files: []string{"a", "b/c"}, Truncated: true},
		&gen.ListFilesResult{},
		&gen.ReadFileResult{Path: "x", Content: "1\tx", StartLine: 1, EndLine: 1, TotalLines: 1, NextStartLine: &n},
		&gen.SearchResult{Matches: []gen.SearchMatch{{Path: "a", Line: 1, Text: "t"}}},
		&gen.RunCommandResult{ExitCode: -1, Stdout: "o", StdoutOmittedBytes: &one, DurationMs: 1.5, TimedOut: true},
		&gen.Run{Id: "r", Status: gen.RunStatusFinished, CreatedAt: when, FinishedAt: &when},
		&gen.ToolSpec{Name: "n", InputSchema: map[string]any{"type": "object", "n": 1.0}},
	}
	for _, v := range values {
		got, err := toData(v)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		var want map[string]any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%T (-json +toData):\n%s", v, diff)
		}
	}
}

func TestFormatNumberMatchesFormatFloat(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 84, 99, 100, 999999, -999999, 1e6, -1e6, 123456.5, 0.1 + 0.2,
		1e-5, 1e21, 1e300, math.MaxInt64, math.MinInt64, 9007199254740993, -0.5} {
		if got, want := formatNumber(v), strconv.FormatFloat(v, 'g', -1, 64); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

func FuzzFormatNumber(f *testing.F) {
	f.Add(84.0)
	f.Add(-123456.0)
	f.Add(1e6)
	f.Fuzz(func(t *testing.T, v float64) {
		if got, want := formatNumber(v), strconv.FormatFloat(v, 'g', -1, 64); got != want {
			t.Fatalf("formatNumber(%v) = %q, want %q", v, got, want)
		}
	})
}
