package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkLongScript runs `specloop run` in-process on a script of 10,000
// calculator calls and a finish, with the trace and the transcript on
// disk. Besides the whole run's figures (ns/op, allocs/op) it reports the
// loop's cost per step, us/step and allocs/step, whose budget is 25 us (3x
// faster than the seed's Python loop) and flat as runs grow.
//
//	go test ./cmd/specloop -run '^$' -bench LongScript -benchtime 10x
func BenchmarkLongScript(b *testing.B) {
	const steps = 10001
	dir := b.TempDir()
	script := filepath.Join(dir, "long.script")
	// Calls that differ, as loop detection stops a run of repeats.
	var body strings.Builder
	for i := range steps - 1 {
		fmt.Fprintf(&body, `{"type":"tool_call","tool_name":"calculator","arguments":{"left":%d,"operation":"multiply","right":7}}`+"\n", i)
	}
	body.WriteString(`{"type":"finish","answer":"done"}` + "\n")
	if err := os.WriteFile(script, []byte(body.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; b.Loop(); i++ {
		var stdout, stderr bytes.Buffer
		args := []string{"run", "--script", script, "--max-steps", fmt.Sprint(steps), "--json", "--workspace", ws,
			"--trace", filepath.Join(dir, "trace.jsonl"), "long run"}
		if code := run(context.Background(), args, nil, &stdout, &stderr); code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*steps), "us/step")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*steps), "allocs/step")
}
