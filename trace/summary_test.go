package trace_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		recorded, name string
		want           bool
	}{
		{"calculator", "calculator", true},
		{trace.Summary("shell"), "shell", true},
		{trace.Summary("shell"), "bash", false},
		{"shell", "bash", false},
		{trace.Summary("shell"), trace.Summary("shell"), true},
	} {
		if got := trace.Names(tt.recorded, tt.name); got != tt.want {
			t.Errorf("Names(%q, %q) = %v, want %v", tt.recorded, tt.name, got, tt.want)
		}
	}
}

// Show prints names and keys from a trace file that did not come from this
// package (an older version recorded them verbatim) and its run id on one
// safe line, escapes visible.
func TestShowClipsHostileNames(t *testing.T) {
	name := "\x1b]0;owned\x07" + strings.Repeat("n", 20_000)
	keys := []string{"\u202e" + strings.Repeat("k", 20_000), "left"}
	id := "\x1b[2J" + strings.Repeat("i", 20_000)
	ev := gen.TraceEvent{RunId: "\x1b]52;c;QUJD\x07\u009b2J\n" + strings.Repeat("r", 20_000), EventType: gen.TraceEventTypeModelAction, ToolName: &name, ArgumentKeys: &keys, CallId: &id}
	line := trace.Format(&ev)
	if n := utf8.RuneCountInString(line); n > 600 { // five fields of at most 101 characters
		t.Fatalf("a line of %d characters", n)
	}
	if strings.ContainsFunc(line, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
		t.Fatalf("the line holds a control character: %q", line)
	}
	if !strings.Contains(line, `args=[\u202ekkk`) || !strings.Contains(line, "…,left]") {
		t.Fatalf("the keys are not shown clipped: %q", line)
	}
	if !strings.Contains(line, `call=\x1b[2Jiii`) {
		t.Fatalf("the call id is not shown clipped: %q", line)
	}
	if !strings.Contains(line, `run=\x1b]52;c;QUJD\x07\u009b2J\nrrr`) {
		t.Fatalf("the run id is not shown clipped, its escapes visible: %q", line)
	}
	summary := trace.Summary(name)
	ev.ToolName = &summary
	if !strings.Contains(trace.Format(&ev), "tool="+summary+" ") {
		t.Fatalf("a summary is not shown whole: %q", trace.Format(&ev))
	}
}

// An approval decision shows what was decided, for whom, and the reason
// only as its summary.
func TestShowApprovalDecision(t *testing.T) {
	d := gen.ApprovalDecisionDeny
	tool, call, reason := "write_file", "c1", trace.Summary("not that file")
	ev := gen.TraceEvent{RunId: "r1", Step: 2, EventType: gen.TraceEventTypeApprovalDecided, ToolName: &tool, CallId: &call,
		Decision: &d, Output: &reason}
	line := trace.Format(&ev)
	for _, want := range []string{"approval_decided", "tool=write_file", "call=c1", "decision=deny", "output=chars=13;sha256="} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
}

// BenchmarkSummary measures one summary, which a step computes several
// times (its output, its text, an answer).
//
//	go test ./trace -run '^$' -bench Summary -benchmem
func BenchmarkSummary(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		trace.Summary("The calculator returned 84 for 12 times 7, as the task asked.")
	}
}
