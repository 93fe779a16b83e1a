package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// actionList proposes its actions in order.
type actionList []agent.Action

func (a *actionList) Next(context.Context, *agent.Request) (agent.Turn, error) {
	next := (*a)[0]
	*a = (*a)[1:]
	return agent.Turn{Actions: []agent.Action{next}}, nil
}

// checkLines fails when a progress line is long or holds a control
// character or the secret.
func checkLines(t *testing.T, out, secret string) {
	t.Helper()
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if n := len([]rune(line)); n > 400 {
			t.Errorf("a progress line of %d characters: %.200q…", n, line)
		}
		if strings.ContainsFunc(line, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
			t.Errorf("a progress line holds a control character: %.200q", line)
		}
		// The tool call's line: the observation's line shows what the
		// model reads, which quotes the start of the name.
		if strings.Contains(line, "→") && strings.Contains(line, secret) {
			t.Errorf("a progress line shows a model-chosen tool name: %.200q", line)
		}
	}
}

// A local run prints a tool name not in the tool list as the trace has it
// (its summary), and nothing a model sends drives the terminal or floods
// it: names, keys and texts are clipped, control characters replaced.
func TestProgressOfHostileNames(t *testing.T) {
	name := "\x1b]0;owned\x07SECRETNAME" + strings.Repeat("n", 20_000)
	key := "\x1b[2J\u202e" + strings.Repeat("k", 20_000)
	m := &actionList{
		{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: name, Arguments: map[string]any{}}},
		{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{"left": 1, "operation": "add", "right": 2, key: 1}}},
		{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "\x1b[31mdone"}},
	}
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := &progressPrinter{w: &out}
	if _, err := agent.Run(context.Background(), gen.Task{Prompt: "x"}, m, agent.Options{Tools: rt, Observer: p.observe}); err != nil {
		t.Fatal(err)
	}
	checkLines(t, out.String(), "SECRETNAME")
	if !strings.Contains(out.String(), "→ "+trace.Summary(name)+" ") {
		t.Errorf("the progress does not name the unknown tool by its summary:\n%.2000s", out.String())
	}
}

// A remote run prints what the server's events say; an event from a
// server that records names verbatim is clipped and made safe too.
func TestRemoteProgressOfHostileNames(t *testing.T) {
	name := "\x1b]0;owned\x07SECRETNAME" + strings.Repeat("n", 20_000)
	keys := []string{"\x1b[2J" + strings.Repeat("k", 20_000), "left"}
	var out bytes.Buffer
	p := &progressPrinter{w: &out}
	for _, ev := range []gen.TraceEvent{
		{EventType: gen.TraceEventTypeModelAction, Step: 1, ActionType: ptrTo(gen.ActionTypeToolCall), ToolName: &name, ArgumentKeys: &keys},
		{EventType: gen.TraceEventTypeObservation, Step: 1, ToolName: &name, IsError: ptrTo(true), Output: ptrTo("chars=1;sha256=00")},
	} {
		p.observe(agent.Progress{Event: &ev})
	}
	if strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("want two lines:\n%.2000q", out.String())
	}
	checkLines(t, out.String(), strings.Repeat("n", 200))
}

func ptrTo[T any](v T) *T { return &v }

// A compaction after a refusal that named the window says the window the
// run learned.
func TestProgressOfAWindowLearned(t *testing.T) {
	var out bytes.Buffer
	p := &progressPrinter{w: &out}
	ev := gen.TraceEvent{EventType: gen.TraceEventTypeHistoryCompacted, Step: 7, ItemsElided: ptrTo(3), BytesBefore: ptrTo(9000), BytesAfter: ptrTo(900), ContextWindow: ptrTo(8192)}
	p.observe(agent.Progress{Event: &ev})
	if want := "step 7   ⇣ context window learned: 8192 tokens (from the provider's error)\nstep 7   ⇣ history compacted: 3 outputs elided, 9000 → 900 bytes\n"; out.String() != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}
