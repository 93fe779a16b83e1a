package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// flaky is a tool runtime whose output changes from call to call, as a
// command's timings do: re-executing it can never reproduce a run.
type flaky struct {
	agent.ToolRuntime
	n int
}

func (f *flaky) Call(ctx context.Context, call *gen.ToolCall) (gen.Observation, error) {
	o, err := f.ToolRuntime.Call(ctx, call)
	f.n++
	o.Content += fmt.Sprintf(" (%d.%03ds)", f.n, f.n*137%1000)
	return o, err
}

// failsOnce is a check that fails the first time.
type failsOnce struct{ n int }

func (c *failsOnce) Check(context.Context) (gen.CheckResult, error) {
	c.n++
	if c.n == 1 {
		return gen.CheckResult{Passed: false, ExitCode: 1, OutputTail: ptr("FAIL x_test.go:3")}, nil
	}
	return gen.CheckResult{Passed: true, ExitCode: 0, OutputTail: ptr("ok")}, nil
}

func TestAReplayRunsTheRecordedRunAgainExactly(t *testing.T) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	task := gen.Task{Prompt: "Compute 12 x 7 and 2 + 3."}
	var recorded []string
	rec := transcript.NewRecorder(w, task.Prompt)
	m := model.NewScript(
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`this is not an action`,
		`{"type":"tool_call","tool_name":"no_such_tool","arguments":{}}`,
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"add","right":3}}`,
		`{"type":"finish","answer":"84 and 5"}`,
		`{"type":"finish","answer":"84 and 5, checked"}`,
	)
	observe := func(out *[]string, rec func(agent.Progress)) func(agent.Progress) {
		return func(p agent.Progress) {
			if rec != nil {
				rec(p)
			}
			switch {
			case p.Observation != nil:
				*out = append(*out, "obs: "+p.Observation.Content)
			case p.Feedback != nil:
				*out = append(*out, "feedback: "+p.Feedback.Message)
			}
		}
	}
	want, err := agent.Run(context.Background(), task, m, agent.Options{MaxSteps: 10, Tools: &flaky{ToolRuntime: rt}, Check: &failsOnce{},
		RunID: "r-replay", Observer: observe(&recorded, rec.Observe)})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()

	log := readLog(t, path)
	replay, err := transcript.NewReplay(log)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	got, err := agent.Run(context.Background(), task, replay.Model(), agent.Options{MaxSteps: 10, Tools: replay.Tools(), Check: replay.Checker(),
		RunID: "r-replay", Observer: observe(&replayed, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got.ExitReason != want.ExitReason || got.StepsUsed != want.StepsUsed || *got.Answer != *want.Answer {
		t.Fatalf("replayed %s after %d steps (%v), recorded %s after %d (%v)", got.ExitReason, got.StepsUsed, *got.Answer, want.ExitReason, want.StepsUsed, *want.Answer)
	}
	if fmt.Sprint(replayed) != fmt.Sprint(recorded) {
		t.Fatalf("the replay saw\n%q\nthe recorded run\n%q", replayed, recorded)
	}
}

func TestAReplayThatGoesElsewhereSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	write(t, path, entries())
	log := readLog(t, path)
	replay, err := transcript.NewReplay(log)
	if err != nil {
		t.Fatal(err)
	}
	_, err = replay.Tools().Call(context.Background(), &gen.ToolCall{ToolName: "read_file"})
	if err == nil || !errors.Is(err, transcript.ErrDiverged) {
		t.Fatalf("a call that was never recorded: %v, want ErrDiverged", err)
	}
}
