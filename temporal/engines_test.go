package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
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
func scriptModels(cfg gen.ModelConfig) (agent.Model, error) {
	sc, err := cfg.AsScriptModelConfig()
	if err != nil {
		return nil, err
	}
	return model.NewScript(sc.Responses...), nil
}

// baseSetup is the host of both engines' runs: commands allowed (a
// worker's --allow-commands, which checks and setups need), unconfined.
func baseSetup() wiring.Config {
	return wiring.Config{Sandbox: sandbox.Policy{Backend: sandbox.None}}
}

// embedded runs a script in-process, as `specloop serve` does, from the
// spec the workflow gets.
func embedded(t *testing.T, responses []string, check string, maxSteps int) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	return embeddedWith(t, model.NewScript(responses...), t.TempDir(), check, maxSteps)
}

// embeddedWith runs m in-process in the workspace dir.
func embeddedWith(t *testing.T, m agent.Model, dir, check string, maxSteps int) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	var buf bytes.Buffer
	sp := scriptInput(nil, check, maxSteps).Spec
	host := baseSetup()
	host.Dir, host.TraceWriter = dir, &buf
	s, err := runner.Open(context.Background(), &sp, host)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, _ := agent.Run(context.Background(), gen.Task{Prompt: "multiply"}, m, s.Options)
	return res, readEvents(t, buf.Bytes())
}

// harness is a test workflow environment with a store and a workspace.
type harness struct {
	env    *testsuite.TestWorkflowEnvironment
	store  *temporal.Store
	dir    string
	root   string
	models func(gen.ModelConfig) (agent.Model, error)
	acts   *temporal.Activities // the worker's, kept across executions
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, scriptModels)
}

// newHarnessWith is newHarness with the workers' model factory.
func newHarnessWith(t *testing.T, models func(gen.ModelConfig) (agent.Model, error)) *harness {
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
	h.env = testEnv(&suite)
	// A low threshold sends most payloads through the store.
	h.env.SetDataConverter(h.store.DataConverter(512))
	if h.acts == nil {
		h.acts = &temporal.Activities{Store: h.store, WorkspaceRoot: h.root, HostQueue: "host-a", Models: h.models, Setup: baseSetup()}
	}
	temporal.Register(h.env, h.acts)
}

// testEnv is a test workflow environment whose deadlock detector allows a
// workflow task a minute, not the SDK's second: a hang guard that a loaded
// machine (a test binary sharing two cores with builds) does not trip.
func testEnv(suite *testsuite.WorkflowTestSuite) *testsuite.TestWorkflowEnvironment {
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	return env
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

// next is the input of the execution the last one continued as new with,
// and whether it did.
func (h *harness) next(t *testing.T) (temporal.RunInput, bool) {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		return temporal.RunInput{}, false
	}
	var in temporal.RunInput
	if err := h.store.DataConverter(512).FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	return in, true
}

// runContinued executes in and each execution it continues as new with,
// every next one in a new environment on the same store (the test
// environment does not follow continue-as-new), and with a new worker
// (a fresh Activities value, as after a worker restart) when newWorker is
// set. It returns how many executions ran and the last one's input.
func (h *harness) runContinued(t *testing.T, in temporal.RunInput, newWorker bool) (int, temporal.RunInput) {
	t.Helper()
	for executions := 1; ; executions++ {
		h.env.ExecuteWorkflow(temporal.WorkflowName, in)
		next, ok := h.next(t)
		if !ok {
			return executions, in
		}
		in = next
		if newWorker {
			h.acts = nil
		}
		h.newEnv()
	}
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
	data, err := h.store.Events(t.Context(), in.ID)
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

// sameRun reports where the run got on the engine who differs from the
// in-process run want: its result, and its trace but for times.
func sameRun(t *testing.T, who string, wantRes, gotRes gen.RunResult, wantEvs, gotEvs []gen.TraceEvent) {
	t.Helper()
	if diff := cmp.Diff(wantRes, gotRes); diff != "" {
		t.Errorf("RunResult differs (-embedded +%s):\n%s", who, diff)
	}
	if diff := cmp.Diff(timeless(wantEvs), timeless(gotEvs)); diff != "" {
		t.Errorf("trace differs (-embedded +%s):\n%s", who, diff)
	}
}

// One loop, two engines: the workflow gives the same result and the same
// trace as the in-process loop on every script.
func TestEnginesAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range scripts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantRes, wantEvs := embedded(t, tc.responses, tc.check, tc.maxSteps)
			h := newHarness(t)
			gotRes, gotEvs := h.run(t, scriptInput(tc.responses, tc.check, tc.maxSteps))
			sameRun(t, "temporal", wantRes, gotRes, wantEvs, gotEvs)
		})
	}
}

// Payloads over the threshold go to the store, not into workflow history.
func TestLargePayloadsGoByReference(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for _, tc := range scripts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantRes, wantEvs := embedded(t, tc.responses, tc.check, tc.maxSteps)
			h := newHarness(t)
			in := scriptInput(tc.responses, tc.check, tc.maxSteps)
			in.ContinueAsNewSteps = 2
			executions, in := h.runContinued(t, in, false)
			gotRes, gotEvs := h.result(t, in)
			if steps := wantRes.StepsUsed; executions != 1+(steps-1)/2 && steps > 0 {
				t.Errorf("%d executions for %d steps, want one per two steps", executions, steps)
			}
			sameRun(t, "continued", wantRes, gotRes, wantEvs, gotEvs)
		})
	}
}

// windowModel has a small context window and reads pkg/f1.go,
// pkg/f2.go, ... one a step, then finishes. It is stateless, as the
// worker builds it again for every call: the next file follows the last
// call in the history, which compaction keeps. Its estimate of a request
// is the workflow's own plus a fixed overhead (so both engines size its
// requests alike), and it reports that as the request's usage; it answers
// a summary request with a summary.
type windowModel struct{ files int }

const windowOverhead = 400

func (windowModel) ContextWindow() int { return 6000 }

func (windowModel) RequestTokens(req *agent.Request) int {
	return windowOverhead + temporal.RequestTokens(req)
}

func (m windowModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	u := &gen.Usage{InputTokens: int64(m.RequestTokens(req)), OutputTokens: 20}
	if req.Summarize {
		return agent.Turn{Summary: fmt.Sprintf("%d items so far: files read, nothing changed.", req.History.Len()), Usage: u}, nil
	}
	next := 1
	for _, it := range req.History.All() {
		if c := it.ToolCall; c != nil {
			if _, err := fmt.Sscanf(c.Arguments["path"].(string), "pkg/f%d.go", &next); err != nil {
				return agent.Turn{}, err
			}
			next++
		}
	}
	a := agent.Action{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "read them all"}}
	if next <= m.files {
		a = agent.Action{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", Arguments: map[string]any{"path": fmt.Sprintf("pkg/f%d.go", next)}}}
	}
	return agent.Turn{Actions: []agent.Action{a}, Usage: u}, nil
}

// writeFiles writes n files of about 3 KB in dir/pkg, for windowModel.
func writeFiles(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		var b strings.Builder
		for line := range 75 {
			fmt.Fprintf(&b, "// f%d.go, line %2d: some Go code here.\n", i, line+1)
		}
		if err := os.WriteFile(filepath.Join(dir, "pkg", fmt.Sprintf("f%d.go", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func eventTypes(evs []gen.TraceEvent) []gen.TraceEventType {
	out := make([]gen.TraceEventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventType
	}
	return out
}

// Both engines compact alike: a run of a context-limited model is
// compacted (its old outputs elided, then summarized) at the same steps,
// with the same sizes, and gives the same result and trace on Temporal as
// in-process.
func TestEnginesCompactAlike(t *testing.T) {
	t.Parallel()
	const files = 30
	m := windowModel{files: files}
	dir := t.TempDir()
	writeFiles(t, dir, files)
	wantRes, wantEvs := embeddedWith(t, m, dir, "", files+1)
	if wantRes.ExitReason != gen.ExitReasonFinished || wantRes.StepsUsed != files+1 {
		t.Fatalf("in-process run: %+v", wantRes)
	}
	compacted, summarized := 0, 0
	for _, ev := range wantEvs {
		if ev.EventType == gen.TraceEventTypeHistoryCompacted {
			compacted++
			if *ev.Summarized {
				summarized++
			}
		}
	}
	if compacted == 0 || summarized == 0 {
		t.Fatalf("%d compactions, %d summaries: the model must need both", compacted, summarized)
	}
	h := newHarnessWith(t, func(gen.ModelConfig) (agent.Model, error) { return m, nil })
	writeFiles(t, h.root, files)
	gotRes, gotEvs := h.run(t, scriptInput(nil, "", files+1))
	sameRun(t, "temporal", wantRes, gotRes, wantEvs, gotEvs)
}

// learningModel is a windowModel told a window far larger than its
// provider's, which refuses a request over 6000 tokens naming that window
// (agent.ContextLengthError).
type learningModel struct{ windowModel }

func (learningModel) ContextWindow() int { return 128_000 }

func (m learningModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	if n := m.RequestTokens(req); n > m.windowModel.ContextWindow() {
		return agent.Turn{}, &agent.ContextLengthError{Window: m.windowModel.ContextWindow(), Err: fmt.Errorf("400: prompt is too long: %d tokens > 6000 maximum", n)}
	}
	return m.windowModel.Next(ctx, req)
}

// Both engines learn a window from the provider's refusal alike: the run
// keeps to it (the same compactions) and records it in the result.
func TestEnginesLearnTheWindowAlike(t *testing.T) {
	t.Parallel()
	const files = 8
	m := learningModel{windowModel{files: files}}
	dir := t.TempDir()
	writeFiles(t, dir, files)
	wantRes, wantEvs := embeddedWith(t, m, dir, "", files+1)
	if wantRes.ExitReason != gen.ExitReasonFinished || wantRes.ContextWindow == nil || *wantRes.ContextWindow != 6000 {
		t.Fatalf("in-process run: %+v", wantRes)
	}
	h := newHarnessWith(t, func(gen.ModelConfig) (agent.Model, error) { return m, nil })
	writeFiles(t, h.root, files)
	gotRes, gotEvs := h.run(t, scriptInput(nil, "", files+1))
	sameRun(t, "temporal", wantRes, gotRes, wantEvs, gotEvs)
}

// Both engines end a run whose provider fails alike: model_error with the
// same text, from an OpenAI-compatible server answering 500 to every
// request (the adapter's retries, and on Temporal the activity's, spent).
func TestEnginesReportProviderErrorsAlike(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
	}))
	defer srv.Close()
	var mc gen.ModelConfig
	if err := mc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "llama3.1"}); err != nil {
		t.Fatal(err)
	}
	models := func(cfg gen.ModelConfig) (agent.Model, error) {
		return model.FromConfig(cfg, model.Options{BaseURL: srv.URL, Getenv: func(string) string { return "" }})
	}
	m, err := models(mc)
	if err != nil {
		t.Fatal(err)
	}
	wantRes, wantEvs := embeddedWith(t, m, t.TempDir(), "", 3)
	if wantRes.ExitReason != gen.ExitReasonModelError || wantRes.Error == nil ||
		*wantRes.Error != "model: openai: request failed after 3 retries: 500 Internal Server Error (server_error)" {
		t.Fatalf("in-process run: %+v (error %v)", wantRes, ptrText(wantRes.Error))
	}
	h := newHarnessWith(t, models)
	in := scriptInput(nil, "", 3)
	in.Model = mc
	gotRes, gotEvs := h.run(t, in)
	if diff := cmp.Diff(wantRes, gotRes); diff != "" {
		t.Errorf("RunResult differs (-embedded +temporal):\n%s", diff)
	}
	if diff := cmp.Diff(eventTypes(wantEvs), eventTypes(gotEvs)); diff != "" {
		t.Errorf("trace event types differ (-embedded +temporal):\n%s", diff)
	}
	// In-process: 4 attempts; on Temporal the activity's 3 attempts of 4.
	if n := requests.Load(); n != 4+3*4 {
		t.Errorf("%d requests, want 16", n)
	}
}

func ptrText(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
