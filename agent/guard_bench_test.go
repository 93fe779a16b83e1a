package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// BenchmarkTruncateOutput measures capping a 1 MiB output (35,000 lines)
// to what the model sees, with the read_file hint's scan of the part cut
// out, as the loop does it.
//
//	go test ./agent -run '^$' -bench TruncateOutput -benchmem
func BenchmarkTruncateOutput(b *testing.B) {
	var sb strings.Builder
	for i := 1; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "%d\tsome line of a large file ünïcödé\n", i)
	}
	out := sb.String()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		s, _ := agent.TruncateOutput(out, agent.DefaultMaxObservationBytes, agent.DefaultMaxObservationLines, func(omitted string) string {
			return fmt.Sprint(strings.Count(omitted, "\n"))
		})
		if len(s) > agent.DefaultMaxObservationBytes {
			b.Fatal(len(s))
		}
	}
}

// BenchmarkStepGuards is BenchmarkStep (2,000 calculator steps, no trace)
// with loop detection on (the default) and off: the difference is the
// cost per step of hashing each call and result.
//
//	go test ./agent -run '^$' -bench StepGuards -benchmem
func BenchmarkStepGuards(b *testing.B) {
	rt := calculatorRuntime(b)
	const steps = 2000
	responses := distinctCalls(steps)
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("stuck_detection_off=%v", off), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				opts := agent.Options{MaxSteps: steps + 1, Tools: rt, Stuck: agent.StuckDetection{Disabled: off}}
				res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), opts)
				if err != nil || res.ExitReason != gen.ExitReasonFinished {
					b.Fatalf("%s %v", res.ExitReason, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps+1), "ns/step")
		})
	}
}

// BenchmarkCompactedRun is the 200-step run of
// TestCompactionKeepsRequestsInTheWindow: a 16k-token window, reads of 150
// lines, the history compacted about every third step. ns/step is the
// loop's cost with compaction and the fake model's estimates (which walk
// the history each call, as an adapter's would).
//
//	go test ./agent -run '^$' -bench CompactedRun -benchmem
func BenchmarkCompactedRun(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		m := &windowModel{window: 16000, calls: 200}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 201, Tools: fileTools(150)})
		if err != nil || res.ExitReason != gen.ExitReasonFinished {
			b.Fatalf("%s %v", res.ExitReason, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/201, "ns/step")
}
