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
		responses := make([]string, steps+1)
		for i := range steps {
			responses[i] = multiply
		}
		responses[steps] = finish
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
