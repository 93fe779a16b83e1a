package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/tools"
)

// The scripted run every test here observes: a turn of two parallel calls
// (one to a tool the run does not offer), invalid output, a finish the
// check rejects, a failing tool call, and a finish the check accepts.
var scriptedRun = []string{
	`{"actions":[{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"add","right":3},"call_id":"c1"},` +
		`{"type":"tool_call","tool_name":"launch_missiles","arguments":{"target":"moon"},"call_id":"c2"}]}`,
	`this is not an action`,
	`{"type":"finish","answer":"5"}`,
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0},"call_id":"c3"}`,
	`{"type":"finish","answer":"5, really"}`,
}

// usageModel reports 10 input and 5 output tokens for every model call.
type usageModel struct{ *model.Script }

var callUsage = gen.Usage{InputTokens: 10, OutputTokens: 5}

func (m usageModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	t, err := m.Script.Next(ctx, req)
	u := callUsage
	var invalid *agent.InvalidOutputError
	if errors.As(err, &invalid) {
		invalid.Usage = &u
	}
	t.Usage = &u
	return t, err
}

// failingModel fails its second call, as a provider that is down.
type failingModel struct{ calls int }

var errProvider = errors.New("the provider is down")

func (m *failingModel) Next(context.Context, *agent.Request) (agent.Turn, error) {
	m.calls++
	if m.calls > 1 {
		return agent.Turn{}, errProvider
	}
	return agent.Turn{Actions: []agent.Action{{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", CallId: ptr("f1"),
		Arguments: map[string]any{"left": 1.0, "operation": "add", "right": 1.0}}}}}, nil
}

// checks fails the completion check the first time and passes it after.
type checks struct{ n int }

func (c *checks) Check(context.Context) (gen.CheckResult, error) {
	c.n++
	if c.n == 1 {
		tail := "FAIL: secret check output"
		return gen.CheckResult{Passed: false, ExitCode: 1, OutputTail: &tail}, nil
	}
	return gen.CheckResult{Passed: true}, nil
}

// runScripted runs scriptedRun observed by tel, as run-1 of an openai model.
func runScripted(t *testing.T, tel *telemetry.Telemetry, info telemetry.RunInfo) gen.RunResult {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	obs := tel.Observe(info, nil)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "Add 2 and 3."}, usageModel{model.NewScript(scriptedRun...)}, agent.Options{
		MaxSteps: 10, RunID: "run-1", Tools: obs.Tools(rt), Check: obs.Check(&checks{}), Trace: obs,
	})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("the scripted run ended %s: %v", res.ExitReason, err)
	}
	return res
}

// runFailing runs a model that fails on its second call.
func runFailing(t *testing.T, tel *telemetry.Telemetry, info telemetry.RunInfo) {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	obs := tel.Observe(info, nil)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "Add."}, &failingModel{}, agent.Options{RunID: "run-2", Tools: obs.Tools(rt), Trace: obs})
	if !errors.Is(err, errProvider) || res.ExitReason != gen.ExitReasonModelError {
		t.Fatalf("the failing run ended %s: %v", res.ExitReason, err)
	}
}

func ptr[T any](v T) *T { return &v }
