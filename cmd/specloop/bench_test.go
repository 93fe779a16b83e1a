package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkLongScript runs `specloop run` in-process on a script of 10,000
// calculator calls and a finish, with the trace on disk: the target
// is under 100 ms for the whole run.
//
//	go test ./cmd/specloop -run '^$' -bench LongScript -benchtime 10x
func BenchmarkLongScript(b *testing.B) {
	dir := b.TempDir()
	script := filepath.Join(dir, "long.script")
	// Calls that differ, as loop detection stops a run of repeats.
	var body strings.Builder
	for i := range 10000 {
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
	for i := 0; b.Loop(); i++ {
		var stdout, stderr bytes.Buffer
		args := []string{"run", "--script", script, "--max-steps", "10001", "--json", "--workspace", ws,
			"--trace", filepath.Join(dir, "trace.jsonl"), "long run"}
		if code := run(context.Background(), args, nil, &stdout, &stderr); code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
}
