package agent_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/trace"
)

// BenchmarkStep measures the loop's overhead per step: the script model, the
// JSON adapter, Action and argument validation against the spec, the
// calculator, the observation, and (in the trace variants) one JSONL line per
// event written to a file. It reports ns/step; per-step cost must not grow
// with the run's length (compare steps=2000 with steps=20000).
//
//	go test ./agent -run '^$' -bench Step -benchmem
func BenchmarkStep(b *testing.B) {
	rt := calculatorRuntime(b)
	for _, steps := range []int{2000, 20000} {
		responses := distinctCalls(steps)
		for _, traced := range []bool{false, true} {
			b.Run(fmt.Sprintf("steps=%d/trace=%v", steps, traced), func(b *testing.B) {
				dir := b.TempDir()
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					opts := agent.Options{MaxSteps: steps + 1, Tools: rt}
					var w *trace.Writer
					if traced {
						var err error
						if w, err = trace.Create(filepath.Join(dir, fmt.Sprintf("run%d.jsonl", i)), trace.SyncNone); err != nil {
							b.Fatal(err)
						}
						opts.Trace = w
					}
					res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), opts)
					if err != nil || res.ExitReason != gen.ExitReasonFinished {
						b.Fatalf("%s %v", res.ExitReason, err)
					}
					if w != nil {
						w.Close()
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps+1), "ns/step")
			})
		}
	}
}

// BenchmarkStepTraceSinks splits the cost of tracing a step (2,000 steps,
// as in BenchmarkStep): encoding the events (discard), the two write(2)
// system calls per step without a file system behind them (devnull), and
// the writes to a file (file, as BenchmarkStep's trace=true).
//
//	go test ./agent -run '^$' -bench StepTraceSinks -benchmem
func BenchmarkStepTraceSinks(b *testing.B) {
	rt := calculatorRuntime(b)
	const steps = 2000
	responses := distinctCalls(steps)
	sinks := []struct {
		name string
		open func(dir string, i int) (*trace.Writer, error)
	}{
		{"discard", func(string, int) (*trace.Writer, error) { return trace.NewWriter(io.Discard, trace.SyncNone), nil }},
		{"devnull", func(string, int) (*trace.Writer, error) { return trace.Create(os.DevNull, trace.SyncNone) }},
		{"file", func(dir string, i int) (*trace.Writer, error) {
			return trace.Create(filepath.Join(dir, fmt.Sprintf("run%d.jsonl", i)), trace.SyncNone)
		}},
	}
	for _, sink := range sinks {
		b.Run(sink.name, func(b *testing.B) {
			dir := b.TempDir()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w, err := sink.open(dir, i)
				if err != nil {
					b.Fatal(err)
				}
				res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), agent.Options{MaxSteps: steps + 1, Tools: rt, Trace: w})
				if err != nil || res.ExitReason != gen.ExitReasonFinished {
					b.Fatalf("%s %v", res.ExitReason, err)
				}
				w.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps+1), "ns/step")
		})
	}
}

// distinctCalls returns n calculator calls that differ (loop detection
// stops a run of repeats) and a finish.
func distinctCalls(n int) []string {
	responses := make([]string, n+1)
	for i := range n {
		responses[i] = mul(i, 7)
	}
	responses[n] = finish
	return responses
}
