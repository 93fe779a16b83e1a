package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// fakeTools is a tool runtime with one tool, name, whose output is
// out(call), held whole in its data, as a user's own tool may return it.
// A fake of a built-in tool says what the spec says that tool does (its
// hints among it), as the tools runtime would.
type fakeTools struct {
	name string
	out  func(call *gen.ToolCall) string
}

func (f fakeTools) Specs() []gen.ToolSpec {
	s := gen.ToolSpec{Name: f.name, Description: "a fake", InputSchema: map[string]any{"type": "object"}, RunsCommands: true}
	for _, b := range gen.BuiltinTools() {
		if b.Name == f.name {
			s.WritesFiles, s.RunsCommands, s.Hints = b.WritesFiles, b.RunsCommands, b.Hints
		}
	}
	return []gen.ToolSpec{s}
}

func (f fakeTools) Call(_ context.Context, call *gen.ToolCall) (gen.Observation, error) {
	out := f.out(call)
	data := map[string]any{"text": out}
	return gen.Observation{Type: gen.ObservationTypeObservation, ToolName: call.ToolName, Content: out, Data: &data}, nil
}

// A tool that returns 1 MB shows the model at most 10 KiB with the marker;
// the Observer (and so a server's client) gets the whole output.
func TestLargeOutputIsCappedForTheModelOnly(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "output line %d ünïcödé\n", i)
	}
	out := b.String()
	script := model.NewScript(`{"type":"tool_call","tool_name":"dump","arguments":{}}`, finish)
	var observed *gen.Observation
	log := &eventLog{}
	opts := agent.Options{Tools: fakeTools{"dump", func(*gen.ToolCall) string { return out }}, Trace: log, Observer: func(p agent.Progress) {
		if p.Observation != nil {
			c := *p.Observation
			observed = &c
		}
	}}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, opts)
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	seen := script.Calls()[1].History.At(1).Observation
	if len(seen.Content) > 10<<10 || strings.Count(seen.Content, "\n") > 256 {
		t.Fatalf("the model saw %d bytes, %d lines; want at most 10 KiB and 256 lines", len(seen.Content), strings.Count(seen.Content, "\n"))
	}
	if !markerRE.MatchString(seen.Content) || !strings.HasPrefix(seen.Content, "output line 0 ") || !strings.HasSuffix(out, seen.Content[strings.LastIndex(seen.Content, "…]\n")+len("…]\n"):]) {
		t.Fatalf("the model's view lacks the head, the marker or the tail:\n%s", clip(seen.Content))
	}
	if observed == nil || observed.Content != out || (*observed.Data)["text"] != out {
		t.Fatal("the Observer did not get the whole output")
	}
	for _, ev := range log.events {
		if ev.EventType == gen.TraceEventTypeObservation && *ev.Output != trace.Summary(seen.Content) {
			t.Fatalf("the trace summarizes %s, not what the model saw", *ev.Output)
		}
	}
}

// The cap is configurable, and the marker of a file read with read_file
// names the lines cut out and how to read them.
func TestReadFileMarkerNamesTheLines(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("some text\n", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	script := model.NewScript(`{"type":"tool_call","tool_name":"read_file","arguments":{"path":"big.txt"}}`, finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{Tools: rt, MaxObservationLines: 100})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	seen := script.Calls()[1].History.At(1).Observation.Content
	want := `[… 902 lines, 12577 bytes omitted; call read_file on "big.txt" with start_line 49 and end_line 950 to see them …]`
	if !strings.Contains(seen, want) {
		t.Fatalf("the marker is not %q:\n%s", want, markerRE.FindString(seen))
	}
}

// A command's output goes through two caps: the tool keeps 16 KiB of the
// head and of the tail of each stream, the loop 10 KiB of that for the
// model. The model's marker says what the tool dropped as well, and how
// to see the rest.
func TestCommandOutputMarkerCountsWhatTheToolDropped(t *testing.T) {
	ws, err := tools.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rt, err := tools.New(tools.Config{Workspace: ws, Sandbox: sandbox.Policy{Backend: sandbox.None}})
	if err != nil {
		t.Fatal(err)
	}
	script := model.NewScript(`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"yes 'some output line' | head -c 1000000"}}`, finish)
	var observed *gen.Observation
	opts := agent.Options{Tools: rt, Observer: func(p agent.Progress) {
		if p.Observation != nil {
			c := *p.Observation
			observed = &c
		}
	}}
	if res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, opts); err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	dropped := (*observed.Data)["stdout_omitted_bytes"].(float64)
	seen := script.Calls()[1].History.At(1).Observation.Content
	want := fmt.Sprintf("; the tool itself did not keep %d more bytes; re-run the command narrowed", int(dropped))
	if m := markerRE.FindString(seen); dropped < 900000 || len(seen) > 10<<10 || !strings.Contains(m, want) {
		t.Fatalf("the model saw %d bytes with the marker %q; want at most 10 KiB and a marker holding %q", len(seen), m, want)
	}
}
