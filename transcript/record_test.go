package transcript_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// A real run's progress makes its transcript: the task's text, the call
// with its arguments, what the tool returned and the result.
func TestRecorderWritesARunsTranscript(t *testing.T) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncAtRunEnd)
	if err != nil {
		t.Fatal(err)
	}
	task := "Compute 12 x 7, please."
	rec := transcript.NewRecorder(w, task)
	m := model.NewScript(
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`{"type":"finish","answer":"12 * 7 = 84"}`,
	)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, agent.Options{MaxSteps: 5, Tools: rt, RunID: "r-rec", Observer: rec.Observe})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log := readLog(t, path)
	var types []string
	for _, e := range log.Entries {
		types = append(types, string(e.EventType))
		if e.RunId != "r-rec" {
			t.Errorf("entry %d has run id %q", e.Seq, e.RunId)
		}
	}
	if got := strings.Join(types, " "); got != "run_started model_action observation model_action run_finished" {
		t.Fatalf("entries: %s", got)
	}
	if e := log.Entries[0]; e.Task == nil || *e.Task != task {
		t.Errorf("run_started: task %v", e.Task)
	}
	call, err := log.Entries[1].Action.AsToolCall()
	if err != nil || call.ToolName != "calculator" || call.Arguments["left"] != float64(12) {
		t.Errorf("model_action: %+v, %v", call, err)
	}
	if o := log.Entries[2].Observation; o == nil || !strings.Contains(o.Content, "84") {
		t.Errorf("observation: %+v", o)
	}
	if r := log.Entries[4].Result; r == nil || r.ExitReason != res.ExitReason || *r.Answer != "12 * 7 = 84" {
		t.Errorf("run_finished: %+v", r)
	}
}

// memSink keeps the entries a Recorder writes.
type memSink []gen.TranscriptEntry

func (s *memSink) Write(e gen.TranscriptEntry) error { *s = append(*s, e); return nil }

// A call's action is the union FromToolCall makes, whatever fields the call
// has (its type unset included): the same JSON value.
func TestRecorderActionIsTheCallsUnion(t *testing.T) {
	text, id := "first <the plan> & more", "c-1"
	call := gen.ToolCall{ToolName: "calculator", CallId: &id, Text: &text,
		Arguments: map[string]any{"left": 1e21, "right": -0.5, "nested": map[string]any{"z": []any{nil, true, "é"}, "a": "x"}},
		Reasoning: &[]gen.ReasoningBlock{{}}}
	for _, typ := range []gen.ToolCallType{"", gen.ToolCallTypeToolCall} {
		call.Type = typ
		var sink memSink
		rec := transcript.NewRecorder(&sink, "task")
		rec.Observe(agent.Progress{Event: &gen.TraceEvent{EventType: gen.TraceEventTypeModelAction}, ToolCall: &call})
		var want gen.Action
		if err := want.FromToolCall(call); err != nil {
			t.Fatal(err)
		}
		if len(sink) != 1 || sink[0].Action == nil {
			t.Fatalf("entries %+v", sink)
		}
		got, _ := sink[0].Action.MarshalJSON()
		wantJSON, _ := want.MarshalJSON()
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(wantJSON, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("action %s, FromToolCall %s", got, wantJSON)
		}
	}
}

// A Writer's line of a call's entry is byte for byte what EncodeEntry
// makes of the entry a Recorder gives any other Sink (package temporal's
// run store): the action is the call, redacted alike, or null when its
// arguments do not encode.
func TestWriterLineOfACallIsTheSinksEntry(t *testing.T) {
	text, id := "first <the plan> & more", "c-1"
	t0 := time.Date(2026, 12, 3, 4, 5, 6, 7, time.UTC)
	calls := []gen.ToolCall{
		{ToolName: "calculator", CallId: &id, Text: &text, Reasoning: &[]gen.ReasoningBlock{{}},
			Arguments: map[string]any{"left": 1e21, "right": -0.5, "nested": map[string]any{"z": []any{nil, true, "é"}, "a": "x"}}},
		{Type: gen.ToolCallTypeToolCall, ToolName: "run_command", Arguments: map[string]any{"command": "echo " + apiKey}},
		{ToolName: "calculator", Arguments: map[string]any{"left": math.NaN()}},
	}
	red := transcript.NewRedactor(env, passed)
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, red, trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	for i := range calls {
		p := agent.Progress{Event: &gen.TraceEvent{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeModelAction, Time: t0}, ToolCall: &calls[i]}
		transcript.NewRecorder(w, "task").Observe(p)
		transcript.NewRecorder(&sink, "task").Observe(p)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(calls) || len(sink) != len(calls) {
		t.Fatalf("%d lines and %d entries for %d calls:\n%s", len(lines), len(sink), len(calls), data)
	}
	for i, e := range sink {
		want, err := transcript.EncodeEntry(red, e, i+1)
		if err != nil {
			t.Fatal(err)
		}
		if lines[i] != string(want) {
			t.Errorf("call %d: the Writer wrote\n%s\nEncodeEntry\n%s", i, lines[i], want)
		}
	}
	if strings.Contains(string(data), apiKey) || !strings.HasPrefix(lines[2], `{"action":null,`) {
		t.Errorf("the key is in the file, or the call that does not encode is not null:\n%s", data)
	}
}
