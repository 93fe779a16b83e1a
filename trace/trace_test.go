package trace_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

const (
	task     = "Compute 12 x 7 and say whether it is greater than 80."
	multiply = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`
	answer   = "12 * 7 = 84, and 84 > 80."
	finish   = `{"type":"finish","answer":"` + answer + `"}`
)

func TestSummary(t *testing.T) {
	got := trace.Summary("84")
	want := "chars=2;sha256=44c8031cb036a7350d8b9b8603af662a4b9cdbd2f96e8d5de5af435c9c35da69"
	if got != want {
		t.Fatalf("Summary(84) = %s, want %s", got, want)
	}
	if s := trace.Summary("héllo"); !strings.HasPrefix(s, "chars=5;") {
		t.Fatalf("Summary counts characters, not bytes: %s", s)
	}
}

// runToFile runs the 12 x 7 script with a trace file and returns its path.
func runToFile(t *testing.T, responses ...string) (string, gen.RunResult) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := trace.Create(path, trace.SyncAtRunEnd)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), agent.Options{RunID: "r1", Tools: rt, Trace: w})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, res
}

func TestTraceOfTheCalculatorRun(t *testing.T) {
	path, _ := runToFile(t, multiply, finish)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	log, err := trace.Read(bytes.NewReader(data))
	if err != nil || log.Torn != nil {
		t.Fatalf("read: %v torn=%v", err, log.Torn)
	}
	type row struct {
		step int
		typ  gen.TraceEventType
	}
	want := []row{{0, "run_started"}, {1, "model_action"}, {1, "observation"}, {2, "model_action"}, {2, "run_finished"}}
	if len(log.Events) != len(want) {
		t.Fatalf("%d events, want %d", len(log.Events), len(want))
	}
	for i, ev := range log.Events {
		if ev.RunId != "r1" || ev.Step != want[i].step || ev.EventType != want[i].typ || ev.Time.IsZero() {
			t.Fatalf("event %d = %+v, want %+v", i, ev, want[i])
		}
	}
	ev := log.Events
	if *ev[0].InputSummary != trace.Summary(task) {
		t.Errorf("run_started input_summary = %s", *ev[0].InputSummary)
	}
	if *ev[1].ActionType != gen.ActionTypeToolCall || *ev[1].ToolName != "calculator" || strings.Join(*ev[1].ArgumentKeys, ",") != "left,operation,right" || ev[1].ModelDurationMs == nil {
		t.Errorf("model_action = %+v", ev[1])
	}
	if *ev[2].Output != trace.Summary("84") || *ev[2].IsError || ev[2].ToolDurationMs == nil {
		t.Errorf("observation = %+v", ev[2])
	}
	if *ev[3].ActionType != gen.ActionTypeFinish || *ev[3].Output != trace.Summary(answer) {
		t.Errorf("finish = %+v", ev[3])
	}
	if *ev[4].ExitReason != gen.ExitReasonFinished || *ev[4].StepsUsed != 2 || ev[4].DurationMs == nil {
		t.Errorf("run_finished = %+v", ev[4])
	}
	// Privacy: no raw text and no argument value reaches the file. The
	// arguments' values would stand as ":12," or ":7}" (a time or duration
	// may hold ":12:" or ":7.").
	for _, secret := range []string{"Compute 12", "multiply", `"84"`, "84 > 80", ":12,", ":12}", ":7,", ":7}"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("trace contains raw text %q:\n%s", secret, data)
		}
	}
}

func TestTraceRecordsFeedbackAndRawOnlyWhenAsked(t *testing.T) {
	path, _ := runToFile(t, "this is not json SECRET", finish)
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("SECRET")) {
		t.Fatalf("the default trace holds raw model output:\n%s", data)
	}
	log, err := trace.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fb := log.Events[1]
	if fb.EventType != gen.TraceEventTypeModelFeedback || *fb.FeedbackKind != gen.FeedbackKindInvalidModelOutput || fb.Output == nil {
		t.Fatalf("feedback event = %+v", fb)
	}

	var buf bytes.Buffer
	w := trace.NewWriter(&buf, trace.SyncNone)
	rt, _ := tools.New(tools.Config{})
	agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript("raw SECRET", finish), agent.Options{Tools: rt, Trace: w, RecordRaw: true})
	if !bytes.Contains(buf.Bytes(), []byte("raw SECRET")) || !bytes.Contains(buf.Bytes(), []byte(`"raw_response"`)) {
		t.Fatalf("RecordRaw did not record the raw output:\n%s", buf.String())
	}
}

func TestTornLastLine(t *testing.T) {
	path, _ := runToFile(t, multiply, finish)
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(data, []byte("\n"))
	for cut := 1; cut < len(lines[3])-1; cut += 7 {
		torn := append(bytes.Join(lines[:3], nil), lines[3][:cut]...)
		log, err := trace.Read(bytes.NewReader(torn))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(log.Events) != 3 || log.Torn == nil || log.Torn.Line != 4 || log.Torn.Bytes != cut {
			t.Fatalf("cut at %d: %d events, torn %+v", cut, len(log.Events), log.Torn)
		}
	}
	// A bad line that is not the last is an error naming the line.
	bad := append(append(bytes.Join(lines[:2], nil), []byte("{\"run_id\":1}\n")...), lines[2]...)
	log, err := trace.Read(bytes.NewReader(bad))
	var le *trace.LineError
	if !errors.As(err, &le) || le.Line != 3 || len(log.Events) != 2 {
		t.Fatalf("err = %v, events %d", err, len(log.Events))
	}
}

func TestWriterAppendsAndNeverRewrites(t *testing.T) {
	path, _ := runToFile(t, finish)
	before, _ := os.ReadFile(path)
	w, err := trace.Create(path, trace.SyncEveryEvent)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := tools.New(tools.Config{})
	agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(finish), agent.Options{RunID: "r2", Tools: rt, Trace: w})
	w.Close()
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) || len(after) <= len(before) {
		t.Fatal("a second run must append to the trace, leaving the first intact")
	}
}

func TestShow(t *testing.T) {
	path, _ := runToFile(t, multiply, finish)
	f, _ := os.Open(path)
	defer f.Close()
	log, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := trace.Show(&out, log); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, want := range []string{"run_started", "tool=calculator", "output=chars=2;", "action=finish", "exit=finished"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q lacks %q", i, lines[i], want)
		}
	}
}

// FuzzRead: any bytes give events or an error, never a panic; every event
// returned is valid.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"run_id":"r1","step":0,"event_type":"run_started","time":"2026-01-01T00:00:00Z"}` + "\n"))
	f.Add([]byte(`{"run_id":"r1","step":1,"event_type":"observation","time":"2026-01-01T00:00:00Z","is_error":true`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := trace.Read(bytes.NewReader(data))
		if log == nil {
			t.Fatalf("nil log (err %v)", err)
		}
		for _, ev := range log.Events {
			if ev.RunId == "" && ev.EventType == "" {
				continue
			}
			if _, err := trace.ParseEvent(mustJSON(t, ev)); err != nil {
				t.Fatalf("an accepted event does not re-validate: %v", err)
			}
		}
	})
}

func TestRunWithoutToolsTracesAnEmptyToolList(t *testing.T) {
	var buf bytes.Buffer
	agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(finish), agent.Options{Trace: trace.NewWriter(&buf, trace.SyncNone)})
	log, err := trace.Read(&buf)
	if err != nil || len(log.Events) != 3 {
		t.Fatalf("a run without tools must leave a valid trace: %v", err)
	}
	if names := log.Events[0].ToolNames; names == nil || len(*names) != 0 {
		t.Fatalf("tool_names = %v, want []", names)
	}
}

// A trace written to a device (--trace /dev/null) works with every sync
// policy: fsync means nothing there and must not fail the run.
func TestWriterOnADevice(t *testing.T) {
	for _, policy := range []trace.SyncPolicy{trace.SyncNone, trace.SyncAtRunEnd, trace.SyncEveryEvent} {
		w, err := trace.Create(os.DevNull, policy)
		if err != nil {
			t.Fatal(err)
		}
		end := gen.TraceEventTypeRunFinished
		if err := w.Emit(&gen.TraceEvent{EventType: end, RunId: "r", Time: time.Now()}); err != nil {
			t.Fatalf("policy %v: emit: %v", policy, err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("policy %v: close: %v", policy, err)
		}
	}
}
