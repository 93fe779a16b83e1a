package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// BenchmarkShow1000Steps is `specloop show FILE` of a 1,000-step
// transcript (a model action with its text and a 2 KB observation a
// step), read and rendered to a discarded terminal (issue budget: 100 ms):
// go test ./cmd/specloop -run '^$' -bench Show1000Steps
func BenchmarkShow1000Steps(b *testing.B) {
	path := filepath.Join(b.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		b.Fatal(err)
	}
	task := "Fix the failing test"
	_ = w.Write(gen.TranscriptEntry{RunId: "r", EventType: gen.TraceEventTypeRunStarted, Task: &task})
	out := strings.Repeat("ok  \tgithub.com/x/y\t0.01s\n", 80)
	for step := 1; step <= 1000; step++ {
		var a gen.Action
		text := fmt.Sprintf("step %d: reading the next file", step)
		_ = a.FromToolCall(gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", Arguments: map[string]any{"path": fmt.Sprintf("pkg/f%d.go", step)}})
		_ = w.Write(gen.TranscriptEntry{RunId: "r", Step: step, EventType: gen.TraceEventTypeModelAction, Action: &a, Text: &text})
		_ = w.Write(gen.TranscriptEntry{RunId: "r", Step: step, EventType: gen.TraceEventTypeObservation,
			Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "read_file", Content: out}})
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	env := &cli.Env{Prog: "specloop", Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
	for b.Loop() {
		if code := showCmd(context.Background(), env, []string{path}); code != exitOK {
			b.Fatalf("show: exit %d", code)
		}
	}
}
