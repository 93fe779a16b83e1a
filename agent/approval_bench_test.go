package agent_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/trace"
)

// BenchmarkStepApproval measures what approvals add to a step (2,000
// calculator steps, as BenchmarkStep): policy never (the hook alone),
// and policy always with an Approver that approves at once (the request,
// the decision and, traced, their two events). It reports ns/step.
//
//	go test ./agent -run '^$' -bench StepApproval -benchmem
func BenchmarkStepApproval(b *testing.B) {
	const steps = 2000
	rt := calculatorRuntime(b)
	responses := distinctCalls(steps) // identical calls would end the run stuck
	approve := agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
		return agent.Approval{Decision: gen.ApprovalDecisionApprove}, nil
	})
	for _, policy := range []gen.ApprovalPolicy{gen.ApprovalPolicyNever, gen.ApprovalPolicyAlways} {
		for _, traced := range []bool{false, true} {
			b.Run(fmt.Sprintf("policy=%s/trace=%v", policy, traced), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					opts := agent.Options{MaxSteps: steps + 1, Tools: rt, ApprovalPolicy: policy, Approver: approve}
					if traced {
						opts.Trace = trace.NewWriter(io.Discard, trace.SyncNone)
					}
					res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), opts)
					if err != nil || res.ExitReason != gen.ExitReasonFinished {
						b.Fatalf("%s %v", res.ExitReason, err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps+1), "ns/step")
			})
		}
	}
}
