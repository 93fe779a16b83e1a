package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/temporal"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

const (
	multiply  = `{"type":"tool_call","tool_name":"calculator","call_id":"c1","arguments":{"left":12,"operation":"multiply","right":7}}`
	divide0   = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`
	writeDone = `{"type":"tool_call","tool_name":"write_file","call_id":"w1","arguments":{"path":"done.txt","content":"ok\n"}}`
	readDone  = `{"type":"tool_call","tool_name":"read_file","arguments":{"path":"done.txt"}}`
	finish    = `{"type":"finish","answer":"84"}`
	twoCalls  = `{"actions":[` + multiply + `,` + writeDone + `]}`
)

// scripts is the table both engines run: every path of the loop that a
// scripted model can reach.
var scripts = []struct {
	name      string
	responses []string
	check     string
	maxSteps  int
}{
	{name: "finish at once", responses: []string{finish}},
	{name: "tool calls then finish", responses: []string{multiply, writeDone, readDone, finish}},
	{name: "a turn of two calls", responses: []string{twoCalls, finish}},
	{name: "tool error and invalid output", responses: []string{divide0, "not json", `{"type":"tool_call"}`, finish}},
	{name: "step budget", responses: []string{multiply, multiply, multiply}, maxSteps: 2},
	{name: "invalid output to the end", responses: []string{"x", "y"}, maxSteps: 2},
	{name: "script exhausted", responses: []string{multiply}, maxSteps: 3},
	{name: "check rejects then passes", responses: []string{finish, writeDone, finish}, check: "test -f done.txt"},
}

// scriptModels builds script models from their configuration, as
// runner.DefaultModels does.
func scriptModels(cfg gen.ModelConfig, _ []gen.ToolSpec) (agent.Model, error) {
	sc, err := cfg.AsScriptModelConfig()
	if err != nil {
		return nil, err
	}
	return model.NewScript(sc.Responses...), nil
}

func baseSetup() wiring.Config {
	return wiring.Config{DisableCommands: true, Sandbox: sandbox.Policy{Backend: sandbox.None}}
}

// embedded runs a script in-process, as `specloop serve` does, from the
// spec the workflow gets.
func embedded(t *testing.T, responses []string, check string, maxSteps int) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	var buf bytes.Buffer
	sp := scriptInput(responses, check, maxSteps).Spec
	sp.Dir, sp.TraceWriter = t.TempDir(), &buf
	s, err := runner.Open(context.Background(), &sp, baseSetup())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, _ := agent.Run(context.Background(), gen.Task{Prompt: "multiply"}, model.NewScript(responses...), s.Options)
	return res, readEvents(t, buf.Bytes())
}

// harness is a test workflow environment with a store and a workspace.
type harness struct {
	env    *testsuite.TestWorkflowEnvironment
	store  *temporal.Store
	dir    string
	root   string
	models temporal.ModelFactory
	acts   *temporal.Activities // the worker's, kept across executions
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, scriptModels)
}

// newHarnessWith is newHarness with the workers' model factory.
func newHarnessWith(t *testing.T, models temporal.ModelFactory) *harness {
	t.Helper()
	h := &harness{dir: t.TempDir(), root: t.TempDir(), models: models}
	var err error
	if h.store, err = temporal.NewStore(h.dir); err != nil {
		t.Fatal(err)
	}
	h.newEnv()
	return h
}

// newEnv gives the harness a new test environment on its store and
// worker: the next workflow execution of a run.
func (h *harness) newEnv() {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	h.env = suite.NewTestWorkflowEnvironment()
	// A low threshold sends most payloads through the store.
	h.env.SetDataConverter(h.store.DataConverter(512))
	if h.acts == nil {
		h.acts = &temporal.Activities{Store: h.store, WorkspaceRoot: h.root, HostQueue: "host-a", Models: h.models, Setup: baseSetup()}
	}
	temporal.Register(h.env, h.acts)
}

func scriptInput(responses []string, check string, maxSteps int) temporal.RunInput {
	var mc gen.ModelConfig
	if err := mc.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: responses}); err != nil {
		panic(err)
	}
	in := temporal.RunInput{Spec: runner.Spec{ID: "run1", CreateRunRequest: gen.CreateRunRequest{Task: gen.Task{Prompt: "multiply"}, Model: mc}}}
	if check != "" {
		in.Check = &check
	}
	if maxSteps != 0 {
		in.MaxSteps = &maxSteps
	}
	return in
}

func (h *harness) run(t *testing.T, in temporal.RunInput) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	h.env.ExecuteWorkflow(temporal.WorkflowName, in)
	return h.result(t, in)
}

// result is the result of the run h's environment executed, and its trace.
func (h *harness) result(t *testing.T, in temporal.RunInput) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	var res gen.RunResult
	if err := h.env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	path, err := h.store.EventsPath(in.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return res, readEvents(t, data)
}

func readEvents(t *testing.T, data []byte) []gen.TraceEvent {
	t.Helper()
	log, err := trace.Read(bytes.NewReader(data))
	if err != nil || log.Torn != nil {
		t.Fatalf("read the trace: %v (torn: %v)", err, log.Torn)
	}
	return log.Events
}

// timeless drops what differs between two runs of the same script: times
// and durations.
func timeless(evs []gen.TraceEvent) []gen.TraceEvent {
	out := make([]gen.TraceEvent, len(evs))
	for i, ev := range evs {
		ev.Time = time.Time{}
		ev.ModelDurationMs, ev.ToolDurationMs, ev.DurationMs = nil, nil, nil
		out[i] = ev
	}
	return out
}

// One loop, two engines: the workflow gives the same result and the same
// trace as the in-process loop on every script.
func TestEnginesAgree(t *testing.T) {
	for _, tc := range scripts {
		t.Run(tc.name, func(t *testing.T) {
			wantRes, wantEvs := embedded(t, tc.responses, tc.check, tc.maxSteps)
			h := newHarness(t)
			gotRes, gotEvs := h.run(t, scriptInput(tc.responses, tc.check, tc.maxSteps))
			if diff := cmp.Diff(wantRes, gotRes); diff != "" {
				t.Errorf("RunResult differs (-embedded +temporal):\n%s", diff)
			}
			if diff := cmp.Diff(timeless(wantEvs), timeless(gotEvs)); diff != "" {
				t.Errorf("trace differs (-embedded +temporal):\n%s", diff)
			}
		})
	}
}

// Payloads over the threshold go to the store, not into workflow history.
func TestLargePayloadsGoByReference(t *testing.T) {
	h := newHarness(t)
	big := `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"big.txt","content":"` + string(bytes.Repeat([]byte("x"), 4096)) + `"}}`
	res, _ := h.run(t, scriptInput([]string{big, readDone, finish}, "", 0))
	if res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v", res)
	}
	blobs, err := os.ReadDir(filepath.Join(h.dir, "blobs"))
	if err != nil || len(blobs) == 0 {
		t.Fatalf("no payload went to the store (%v)", err)
	}
}

// A run that continues as new every two steps gives the result and the
// trace of the in-process loop: each execution hands the next one the
// loop's state (its history through the store) and goes on where it
// stopped. The test environment does not follow continue-as-new: the test
// starts each next execution itself, in a new environment on the same
// store.
func TestContinueAsNewGivesTheSameRun(t *testing.T) {
	for _, tc := range scripts {
		t.Run(tc.name, func(t *testing.T) {
			wantRes, wantEvs := embedded(t, tc.responses, tc.check, tc.maxSteps)
			h := newHarness(t)
			in := scriptInput(tc.responses, tc.check, tc.maxSteps)
			in.ContinueAsNewSteps = 2
			executions := 1
			for {
				h.env.ExecuteWorkflow(temporal.WorkflowName, in)
				var can *workflow.ContinueAsNewError
				if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
					break
				}
				executions++
				in = temporal.RunInput{}
				if err := h.store.DataConverter(512).FromPayloads(can.Input, &in); err != nil {
					t.Fatal(err)
				}
				h.newEnv()
			}
			gotRes, gotEvs := h.result(t, in)
			if steps := wantRes.StepsUsed; executions != 1+(steps-1)/2 && steps > 0 {
				t.Errorf("%d executions for %d steps, want one per two steps", executions, steps)
			}
			if diff := cmp.Diff(wantRes, gotRes); diff != "" {
				t.Errorf("RunResult differs (-embedded +continued):\n%s", diff)
			}
			if diff := cmp.Diff(timeless(wantEvs), timeless(gotEvs)); diff != "" {
				t.Errorf("trace differs (-embedded +continued):\n%s", diff)
			}
		})
	}
}
