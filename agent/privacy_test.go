package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/trace"
)

// actions is a Model that proposes the given actions in order, as a
// provider adapter or a custom model may: nothing limits what it names.
type actions []agent.Action

func (a *actions) Next(context.Context, *agent.Request) (agent.Turn, error) {
	next := (*a)[0]
	*a = (*a)[1:]
	return agent.Turn{Actions: []agent.Action{next}}, nil
}

// observed runs the task and returns the trace file's bytes, the events
// the Observer was shown (as JSON) and the histories the model saw.
func observed(t *testing.T, m agent.Model) (gen.RunResult, []byte, []byte) {
	t.Helper()
	var file, shown bytes.Buffer
	opts := agent.Options{MaxSteps: 10, Tools: calculatorRuntime(t), Trace: trace.NewWriter(&file, trace.SyncNone),
		Observer: func(p agent.Progress) {
			b, err := json.Marshal(p.Event)
			if err != nil {
				t.Fatal(err)
			}
			shown.Write(append(b, '\n'))
		}}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res, file.Bytes(), shown.Bytes()
}

func decodeEvents(t *testing.T, data []byte) []gen.TraceEvent {
	t.Helper()
	log, err := trace.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return log.Events
}

// A tool name that is not in the tool list and an argument key that is
// not in the tool's input schema are chosen by the model and may hold
// anything (a secret it read, say): the trace and the events shown to an
// observer (the server's SSE stream) record them as summaries only, and
// still tell which.
func TestUnknownToolNamesAndKeysAreSummarized(t *testing.T) {
	secretName := "sk-" + strings.Repeat("SECRETNAME", 2000)
	secretKey := strings.Repeat("SECRETKEY0", 2000)
	m := &actions{
		{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: secretName, Arguments: map[string]any{"x": 1}}},
		{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator",
			Arguments: map[string]any{"left": 1, "operation": "add", "right": 2, secretKey: 3}}},
		{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "done"}},
	}
	res, file, shown := observed(t, m)
	if res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result = %+v", res)
	}
	for what, data := range map[string][]byte{"trace file": file, "observed events": shown} {
		for _, secret := range []string{"SECRETNAME", "SECRETKEY"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("the %s holds the model-chosen %s verbatim", what, secret)
			}
		}
		evs := decodeEvents(t, data)
		var tools [][2]string
		var keys [][]string
		for _, ev := range evs {
			if ev.ToolName != nil {
				tools = append(tools, [2]string{string(ev.EventType), *ev.ToolName})
			}
			if ev.ArgumentKeys != nil {
				keys = append(keys, *ev.ArgumentKeys)
			}
		}
		name := trace.Summary(secretName)
		wantTools := [][2]string{{"model_action", name}, {"observation", name}, {"model_action", "calculator"}, {"observation", "calculator"}}
		if !slices.Equal(tools, wantTools) {
			t.Errorf("%s: tool names %s, want %s", what, short(tools), short(wantTools))
		}
		wantKeys := [][]string{{trace.Summary("x")}, {trace.Summary(secretKey), "left", "operation", "right"}}
		slices.SortFunc(wantKeys[1], strings.Compare)
		if len(keys) != 2 || !slices.Equal(keys[0], wantKeys[0]) || !slices.Equal(keys[1], wantKeys[1]) {
			t.Errorf("%s: argument keys %s, want %s", what, short(keys), short(wantKeys))
		}
	}
}

// A short unknown tool name a script (raw model text) sends is summarized
// too: short is not safe.
func TestUnknownShortToolNameIsSummarized(t *testing.T) {
	secret := "sk-proj-SECRETNAME0123456789"
	script := model.NewScript(`{"type":"tool_call","tool_name":"`+secret+`","arguments":{}}`, finish)
	_, file, shown := observed(t, script)
	if bytes.Contains(file, []byte(secret)) || bytes.Contains(shown, []byte(secret)) {
		t.Fatalf("the trace holds the unknown tool name verbatim:\n%s", file)
	}
	if !bytes.Contains(file, []byte(`"tool_name":"`+trace.Summary(secret)+`"`)) {
		t.Fatalf("the trace does not say which tool was called:\n%s", file)
	}
}

// short formats v for a failure message, clipped: the values under test
// are 20,000 characters long.
func short(v any) string {
	s := fmt.Sprintf("%q", v)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// Feedback and error messages that name what the model sent (a 20 KB
// unknown argument key, say) are clipped to MaxMessageBytes and say so.
func TestMessagesToTheModelAreClipped(t *testing.T) {
	key := strings.Repeat("k", 20_000)
	script := model.NewScript(
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":2,"`+key+`":3}}`,
		`{"type":"finish","answer":"x","`+key+`":1}`,
		finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{Tools: calculatorRuntime(t)})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result = %+v, %v", res, err)
	}
	h := script.Calls()[2].History
	if h.Len() != 3 {
		t.Fatalf("history of %d items, want a call, its observation and feedback", h.Len())
	}
	obs, fb := h.At(1).Observation, h.At(2).Feedback
	if obs == nil || !obs.IsError || fb == nil {
		t.Fatalf("history = %s", short(h.Items()))
	}
	for what, msg := range map[string]string{"error observation": obs.Content, "feedback": fb.Message} {
		if len(msg) > agent.MaxMessageBytes || !strings.Contains(msg, "clipped") || !utf8.ValidString(msg) {
			t.Errorf("%s of %d bytes, want at most %d that says it was clipped: %s", what, len(msg), agent.MaxMessageBytes, short(msg))
		}
		if !strings.Contains(msg, `"/kkkk`) {
			t.Errorf("the clipped %s no longer names the field: %s", what, short(msg))
		}
	}
}

func TestClipMessage(t *testing.T) {
	for _, n := range []int{0, 10, agent.MaxMessageBytes, agent.MaxMessageBytes + 1, 20_000} {
		for _, fill := range []string{"a", "é", "😀"} {
			msg := strings.Repeat(fill, n/len(fill)+1)[:n/len(fill)*len(fill)]
			got := agent.ClipMessage(msg)
			switch {
			case len(msg) <= agent.MaxMessageBytes && got != msg:
				t.Errorf("a message of %d bytes was changed", len(msg))
			case len(got) > agent.MaxMessageBytes || !utf8.ValidString(got):
				t.Errorf("a message of %d bytes became %d bytes (valid UTF-8: %v)", len(msg), len(got), utf8.ValidString(got))
			case len(msg) > agent.MaxMessageBytes && (!strings.HasPrefix(msg, strings.TrimRight(got[:len(got)/2], "…")) || !strings.Contains(got, strconv.Itoa(len(msg))+" bytes")):
				t.Errorf("a clipped message does not keep its start and say its length: %s", short(got))
			}
		}
	}
}

// A check's output in finish_rejected feedback keeps its end, at most
// MaxCheckOutputBytes of it, whatever the Checker returned.
func TestCheckOutputIsClipped(t *testing.T) {
	tail := strings.Repeat("x", 1<<20) + "FAIL: TestEnd"
	script := model.NewScript(finish, finish)
	res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, script,
		agent.Options{MaxSteps: 2, Check: failingCheck(tail)})
	if res.ExitReason != gen.ExitReasonCheckFailed {
		t.Fatalf("result = %+v", res)
	}
	fb := script.Calls()[1].History.At(1).Feedback
	if fb == nil || len(fb.Message) > agent.MaxCheckOutputBytes+agent.MaxMessageBytes || !strings.HasSuffix(fb.Message, "FAIL: TestEnd") || !strings.Contains(fb.Message, "clipped") {
		t.Fatalf("feedback of %d bytes: %s", len(fb.Message), short(fb.Message))
	}
}

type failingCheck string

func (c failingCheck) Check(context.Context) (gen.CheckResult, error) {
	out := string(c)
	return gen.CheckResult{ExitCode: 1, OutputTail: &out}, nil
}

// A model error reaches the caller of Run with its type: errors.As finds
// the model's own error through the chain.
func TestModelErrorKeepsItsType(t *testing.T) {
	want := &statusError{code: 503}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, failingModel{want}, agent.Options{})
	var got *statusError
	if res.ExitReason != gen.ExitReasonModelError || !errors.As(err, &got) || got != want {
		t.Fatalf("Run = %s, %v; want model_error wrapping the model's error", res.ExitReason, err)
	}
	_, err = agent.Answer(context.Background(), task, failingModel{want}, agent.Options{})
	if !errors.Is(err, agent.ErrModel) || !errors.As(err, &got) || got != want {
		t.Fatalf("Answer error %v does not match ErrModel and wrap the model's error", err)
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + strconv.Itoa(e.code) }

type failingModel struct{ err error }

func (m failingModel) Next(context.Context, *agent.Request) (agent.Turn, error) {
	return agent.Turn{}, m.err
}

// A call id is the model's to write, and one shaped like a key (a model
// that read one may put it there) is recorded as its summary in the trace
// and the events an observer sees (the server's event stream, and the
// spans built from them), however plain its characters: the call's
// model_action and observation still pair by it.
func TestKeyShapedCallIDsAreSummarized(t *testing.T) {
	for _, id := range []string{
		"sk-proj-" + strings.Repeat("A", 48),
		"ghp_0123456789abcdefghijABCDEFGHIJ012345",
		"AKIAIOSFODNN7EXAMPLE",
		"Zx81kQpL2vN7rT0aYb5cWd3eFg6hJi9m",
	} {
		t.Run(id[:4], func(t *testing.T) {
			call := `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1},"call_id":"` + id + `"}`
			res, file, shown := observed(t, model.NewScript(call, finish))
			if res.ExitReason != gen.ExitReasonFinished {
				t.Fatalf("result = %+v", res)
			}
			for what, data := range map[string][]byte{"trace file": file, "observed events": shown} {
				if bytes.Contains(data, []byte(id)) {
					t.Errorf("the %s holds the call id verbatim", what)
				}
				var paired []string
				for _, ev := range decodeEvents(t, data) {
					if ev.CallId != nil {
						paired = append(paired, string(ev.EventType)+" "+*ev.CallId)
					}
				}
				want := []string{"model_action " + trace.Summary(id), "observation " + trace.Summary(id)}
				if !slices.Equal(paired, want) {
					t.Errorf("%s: call ids %q, want %q", what, paired, want)
				}
			}
		})
	}
}

// Provider call ids are recorded as they are.
func TestProviderCallIDsArePlain(t *testing.T) {
	for _, id := range []string{"call_X8mN2pQrS7tUvW9yZa1bC3dE", "toolu_01A09q90qw90lq917835lq9", "chatcmpl-tool-3f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c", "c1"} {
		call := `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1},"call_id":"` + id + `"}`
		_, file, _ := observed(t, model.NewScript(call, finish))
		if n := bytes.Count(file, []byte(`"call_id":"`+id+`"`)); n != 2 {
			t.Errorf("the trace holds the call id %q %d times, want its model_action and observation", id, n)
		}
	}
}
