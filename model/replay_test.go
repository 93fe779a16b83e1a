package model_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

func TestScriptConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) agent.Model {
		raws := make([]string, len(turns))
		for i, turn := range turns {
			raws[i] = turn.Raw()
		}
		return model.NewScript(raws...)
	})
}

// record runs modeltest.Task with m and the given runtime, writing a real
// JSONL trace with raw recording on, and returns the result and the trace
// as read back.
func record(t *testing.T, m agent.Model, rt agent.ToolRuntime, maxSteps int, recordRaw bool) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, trace.SyncNone)
	res, err := agent.Run(context.Background(), modeltest.Task, m, agent.Options{MaxSteps: maxSteps, Tools: rt, Trace: w, RecordRaw: recordRaw})
	if err != nil && res.ExitReason != gen.ExitReasonModelError {
		t.Fatalf("agent.Run: %v", err)
	}
	log, err := trace.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return res, log.Events
}

func TestReplayConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) agent.Model {
		raws := make([]string, len(turns))
		for i, turn := range turns {
			raws[i] = turn.Raw()
		}
		_, events := record(t, model.NewScript(raws...), modeltest.Runtime(t), len(turns), true)
		r, err := model.NewReplay(events, model.ReplayConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
}

// usageModel is a script that reports token usage, as a provider does.
type usageModel struct{ *model.Script }

// Next is the Script's turn with usage.
func (m usageModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	h := req.History
	turn, err := m.Script.Next(ctx, req)
	u := &gen.Usage{InputTokens: int64(100 + 10*h.Len()), OutputTokens: 7}
	var inv *agent.InvalidOutputError
	if errors.As(err, &inv) {
		inv.Usage = u
	}
	turn.Usage = u
	return turn, err
}

const (
	multiply  = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"c1"}`
	divide    = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`
	finish84  = `{"type":"finish","answer":"12 x 7 = 84."}`
	notAction = `I think the answer is 84.`
	// twoCalls is a turn of two parallel calls.
	twoCalls = `{"actions":[{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"add","right":2},"call_id":"c2"},` +
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0},"call_id":"c3"}]}`
)

// comparable strips what differs between two runs of the same actions.
var comparable = cmpopts.IgnoreFields(gen.TraceEvent{}, "RunId", "Time", "ModelDurationMs", "ToolDurationMs", "DurationMs")

func TestReplayReproducesRun(t *testing.T) {
	script := usageModel{model.NewScript(multiply, notAction, twoCalls, divide, finish84)}
	want, recorded := record(t, script, modeltest.Runtime(t), 5, true)
	if want.ExitReason != gen.ExitReasonFinished || want.StepsUsed != 5 || want.Usage == nil || want.Usage.OutputTokens != 5*7 {
		t.Fatalf("recorded run = %+v", want)
	}
	if got := modeltest.CallTrace(recorded)[2:6]; !cmp.Equal(got, []string{
		"3 model_action c2", "3 model_action c3",
		"3 observation c2 " + trace.Summary("4"), "3 observation c3 " + trace.Summary("error: division by zero"),
	}) {
		t.Fatalf("the recorded turn = %q", got)
	}
	r, err := model.NewReplay(recorded, model.ReplayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxSteps() != 5 {
		t.Fatalf("replay with %d steps", r.MaxSteps())
	}
	got, replayed := record(t, r, modeltest.Runtime(t), r.MaxSteps(), true)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(gen.RunResult{}, "RunId")); diff != "" {
		t.Fatalf("replayed result (-recorded +replayed):\n%s", diff)
	}
	// Every event but the feedback's message summary is the same: replay
	// rejects the invalid output again, in the JSON adapter's words.
	if diff := cmp.Diff(recorded, replayed, comparable, cmpopts.IgnoreFields(gen.TraceEvent{}, "Output")); diff != "" {
		t.Fatalf("replayed trace (-recorded +replayed):\n%s", diff)
	}
	for i := range recorded {
		if recorded[i].EventType != gen.TraceEventTypeModelFeedback && !cmp.Equal(recorded[i].Output, replayed[i].Output) {
			t.Fatalf("event %d output differs: %v vs %v", i, *recorded[i].Output, *replayed[i].Output)
		}
	}
}

// workspace returns a runtime over a new workspace whose notes.txt holds
// notes.
func workspace(t *testing.T, notes string) *tools.Runtime {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestReplayReportsDivergence(t *testing.T) {
	// The recorded run read a file; the replay runs where the file changed.
	read := `{"type":"tool_call","tool_name":"read_file","arguments":{"path":"notes.txt"}}`
	_, recorded := record(t, model.NewScript(read, finish84), workspace(t, "alpha\n"), 5, true)
	r, err := model.NewReplay(recorded, model.ReplayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, events := record(t, r, workspace(t, "beta\n"), 5, false)
	if res.ExitReason != gen.ExitReasonModelError || res.StepsUsed != 2 {
		t.Fatalf("result = %+v, want model_error at step 2", res)
	}
	var recordedObs string
	for _, ev := range recorded {
		if ev.EventType == gen.TraceEventTypeObservation {
			recordedObs = *ev.Output
		}
	}
	want := "replay diverged from the recorded run at step 1: the read_file observation differs from the recorded one (recorded " + recordedObs + ", replayed chars="
	if res.Error == nil || !strings.Contains(*res.Error, want) {
		t.Fatalf("error = %v, want it to contain %q", res.Error, want)
	}
	if last := events[len(events)-1]; last.Error == nil || !strings.Contains(*last.Error, want) {
		t.Fatalf("the trace does not say where the replay diverged: %+v", last)
	}
}

func TestReplayDivergences(t *testing.T) {
	_, recorded := record(t, model.NewScript(multiply, finish84), modeltest.Runtime(t), 5, true)
	_, failed := record(t, model.NewScript(divide, finish84), modeltest.Runtime(t), 5, true)
	obs := func(content string, isError bool) agent.Item {
		return agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: content, IsError: isError}}
	}
	call := agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{}}}
	tests := []struct {
		name    string
		events  []gen.TraceEvent
		task    string
		history []agent.Item
		calls   int // Next calls before the checked one
		want    string
	}{
		{"task", recorded, "Another task", nil, 0, "the task differs from the recorded one"},
		{"tool", recorded, "", []agent.Item{call, {Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "read_file", Content: "84"}}}, 1, "at step 1: the observation is from tool read_file, the recorded one from calculator"},
		{"failure", recorded, "", []agent.Item{call, obs("84", true)}, 1, "at step 1: the calculator call failed, unlike in the recorded run"},
		{"success", failed, "", []agent.Item{call, obs("84", false)}, 1, "at step 1: the calculator call succeeded, unlike in the recorded run"},
		{"extra observation", recorded, "", []agent.Item{call, obs("84", false), call, obs("84", false)}, 1, "at step 1: the calculator call has an observation the recorded run does not have"},
		{"past the recording", recorded, "", []agent.Item{call, obs("84", false)}, 2, "at step 3: the recorded run made only 2 model calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := model.NewReplay(tt.events, model.ReplayConfig{})
			if err != nil {
				t.Fatal(err)
			}
			task := modeltest.Task
			for range tt.calls {
				if _, err := modeltest.Ask(t, context.Background(), r, task, agent.NewHistory()); err != nil {
					t.Fatal(err)
				}
			}
			if tt.task != "" {
				task = gen.Task{Prompt: tt.task}
			}
			_, err = modeltest.Ask(t, context.Background(), r, task, agent.NewHistory(tt.history...))
			if !errors.Is(err, model.ErrDiverged) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrDiverged with %q", err, tt.want)
			}
			if agent.IsInvalidOutput(err) {
				t.Fatal("a divergence must end the run, not become feedback")
			}
		})
	}
}

func TestReplayNeedsRawResponses(t *testing.T) {
	_, events := record(t, model.NewScript(multiply, finish84), modeltest.Runtime(t), 5, false)
	_, err := model.NewReplay(events, model.ReplayConfig{})
	if !errors.Is(err, model.ErrNoRawResponses) || !strings.Contains(err.Error(), "--record-raw") {
		t.Fatalf("err = %v, want ErrNoRawResponses naming --record-raw", err)
	}
}

func TestReplaySelectsRun(t *testing.T) {
	first, a := record(t, model.NewScript(finish84), modeltest.Runtime(t), 5, true)
	second, b := record(t, model.NewScript(`{"type":"finish","answer":"second"}`), modeltest.Runtime(t), 5, true)
	events := append(a, b...)
	tests := []struct {
		name, runID, answer, err string
	}{
		{"last by default", "", "second", ""},
		{"first by id", *first.RunId, "12 x 7 = 84.", ""},
		{"second by id", *second.RunId, "second", ""},
		{"unknown id", "nope", "", "no run with that id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := model.NewReplay(events, model.ReplayConfig{RunID: tt.runID})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := modeltest.Ask(t, context.Background(), r, modeltest.Task, agent.NewHistory())
			if err != nil || a.Finish == nil || a.Finish.Answer != tt.answer {
				t.Fatalf("action = %+v, %v; want finish %q", a, err, tt.answer)
			}
		})
	}
	if _, err := model.NewReplay(nil, model.ReplayConfig{}); err == nil {
		t.Fatal("a replay of an empty trace must fail")
	}
}

// rejectingModel rejects a well-formed action, as an adapter rejects a call
// of an unknown tool, recording the action's wire form as the raw output.
type rejectingModel struct{ raw string }

func (m rejectingModel) Next(context.Context, *agent.Request) (agent.Turn, error) {
	return agent.Turn{}, &agent.InvalidOutputError{Message: "tool call 1 names a tool that does not exist", Raw: m.raw}
}

func TestReplayRejectsRecordedInvalidOutput(t *testing.T) {
	_, events := record(t, rejectingModel{raw: multiply}, modeltest.Runtime(t), 1, true)
	r, err := model.NewReplay(events, model.ReplayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = modeltest.Ask(t, context.Background(), r, modeltest.Task, agent.NewHistory())
	if !agent.IsInvalidOutput(err) {
		t.Fatalf("err = %v, want the recorded rejection replayed as invalid output", err)
	}
}

func TestOpenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := trace.Create(path, trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	want, err := agent.Run(context.Background(), modeltest.Task, model.NewScript(multiply, finish84), agent.Options{Tools: modeltest.Runtime(t), Trace: w, RecordRaw: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := model.OpenReplay(path, model.ReplayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := agent.Run(context.Background(), modeltest.Task, r, agent.Options{Tools: modeltest.Runtime(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got.ExitReason != want.ExitReason || *got.Answer != *want.Answer || got.StepsUsed != want.StepsUsed {
		t.Fatalf("replayed %+v, recorded %+v", got, want)
	}
	if _, err := model.OpenReplay(filepath.Join(t.TempDir(), "missing.jsonl"), model.ReplayConfig{}); err == nil {
		t.Fatal("OpenReplay of a missing file succeeded")
	}
}

// The trace records the name of a tool that is not offered as its
// summary; a replay of a run that called one still follows it.
func TestReplayOfAnUnknownToolCall(t *testing.T) {
	unknown := `{"type":"tool_call","tool_name":"shell","arguments":{"cmd":"ls"}}`
	want, recorded := record(t, model.NewScript(unknown, finish84), modeltest.Runtime(t), 5, true)
	for _, ev := range recorded {
		if ev.ToolName != nil && *ev.ToolName == "shell" {
			t.Fatalf("the trace records the unknown tool's name verbatim: %+v", ev)
		}
	}
	r, err := model.NewReplay(recorded, model.ReplayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := record(t, r, modeltest.Runtime(t), 5, false)
	if got.ExitReason != gen.ExitReasonFinished || got.StepsUsed != want.StepsUsed {
		t.Fatalf("replayed %s after %d steps (%v), recorded %s after %d", got.ExitReason, got.StepsUsed, deref(got.Error), want.ExitReason, want.StepsUsed)
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
