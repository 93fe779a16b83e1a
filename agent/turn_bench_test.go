package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/trace"
)

// BenchmarkStepTurn is BenchmarkStep with turns of four parallel calls
// (2,000 turns, written to a trace file): ns/step is per model call,
// ns/action per tool call.
//
//	go test ./agent -run '^$' -bench StepTurn -benchmem
func BenchmarkStepTurn(b *testing.B) {
	rt := calculatorRuntime(b)
	const steps, calls = 2000, 4
	responses := make([]string, steps+1)
	for i := range steps {
		// calls that differ, as loop detection stops repeats
		responses[i] = turn(mul(calls*i, 7), mul(calls*i+1, 7), mul(calls*i+2, 7), mul(calls*i+3, 7))
	}
	responses[steps] = finish
	dir := b.TempDir()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w, err := trace.Create(filepath.Join(dir, fmt.Sprintf("run%d.jsonl", i)), trace.SyncNone)
		if err != nil {
			b.Fatal(err)
		}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), agent.Options{MaxSteps: steps + 1, Tools: rt, Trace: w})
		if err != nil || res.ExitReason != gen.ExitReasonFinished {
			b.Fatalf("%s %v", res.ExitReason, err)
		}
		w.Close()
	}
	perStep := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(steps+1)
	b.ReportMetric(perStep, "ns/step")
	b.ReportMetric(perStep*float64(steps+1)/float64(steps*calls+1), "ns/action")
}
