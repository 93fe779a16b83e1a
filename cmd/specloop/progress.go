package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
)

// progressPrinter prints each step of a run as it happens, one line an event,
// and, through live, the model's text as it streams in and, on a terminal,
// how long the step has waited for the model.
type progressPrinter struct {
	w     io.Writer
	clock clock // its ticker, on a terminal, shows the wait for the model

	mu       sync.Mutex // live's waiting line and observe
	streamed int        // the step whose text live printed (its line still open)
	waiting  func()     // stops the waiting line; nil when none is shown
}

// waitTick is how often the waiting line's seconds are updated.
const waitTick = time.Second

// live shows a step before its event: on a terminal, `waiting for the
// model (12 s)` on one line rewritten in place until the model's first
// text or its turn arrives; then the text as it streams.
func (p *progressPrinter) live(l agent.Live) {
	if l.Call != nil {
		return // the step's line says which call runs
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopWaiting()
	if l.Text == "" {
		p.startWaiting()
		return
	}
	if p.streamed != l.Step {
		p.closeStreamed()
		fmt.Fprintf(p.w, "step %-3d   model: ", l.Step)
		p.streamed = l.Step
	}
	io.WriteString(p.w, l.Text)
}

// startWaiting shows the waiting line, on a terminal only (p.mu held).
func (p *progressPrinter) startWaiting() {
	if p.clock.ticker == nil {
		return
	}
	stop := p.clock.every(waitTick, func(waited time.Duration) {
		p.mu.Lock()
		// The line's own control sequences go past the sanitiser, which
		// would show them as escapes.
		fmt.Fprintf(termsafe.Exact(p.w), "\r\033[K         waiting for the model (%d s)", int(waited.Seconds()))
		p.mu.Unlock()
	})
	p.waiting = func() {
		p.mu.Unlock() // the ticker's goroutine may be waiting for it
		stop()
		p.mu.Lock()
		io.WriteString(termsafe.Exact(p.w), "\r\033[K")
	}
}

// stopWaiting clears the waiting line, if one is shown (p.mu held).
func (p *progressPrinter) stopWaiting() {
	if p.waiting != nil {
		w := p.waiting
		p.waiting = nil
		w()
	}
}

// closeStreamed ends the line of streamed text, if one is open (p.mu
// held).
func (p *progressPrinter) closeStreamed() {
	if p.streamed != 0 {
		io.WriteString(p.w, "\n")
		p.streamed = 0
	}
}

func (p *progressPrinter) observe(pr agent.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopWaiting()
	streamed := p.streamed
	p.closeStreamed()
	ev := pr.Event
	switch ev.EventType {
	case gen.TraceEventTypeRunStarted:
		if docs := deref(ev.ProjectDocs); len(docs) > 0 {
			fmt.Fprintf(p.w, "instructions from %s\n", docList(docs))
		}
	case gen.TraceEventTypeModelAction:
		// The model's own words, before the turn's first action, unless
		// they were streamed already.
		if text := pr.Text(); text != nil && streamed != ev.Step {
			fmt.Fprintf(p.w, "step %-3d   model: %s\n", ev.Step, oneLine(*text, 300))
		}
		switch {
		case pr.ToolCall != nil:
			// The tool's name as the trace has it: a name not in the tool
			// list is a summary.
			fmt.Fprintf(p.w, "step %-3d → %s %s\n", ev.Step, oneLine(deref(ev.ToolName), maxNameChars), oneLine(compactJSON(pr.ToolCall.Arguments), 100))
		case pr.Finish != nil:
			fmt.Fprintf(p.w, "step %-3d → finish %s\n", ev.Step, oneLine(pr.Finish.Answer, 100))
		case ev.ToolName != nil: // a remote run: the trace has the argument keys only
			var keys []string
			for _, k := range deref(ev.ArgumentKeys) {
				keys = append(keys, oneLine(k, maxNameChars))
			}
			fmt.Fprintf(p.w, "step %-3d → %s [%s]\n", ev.Step, oneLine(*ev.ToolName, maxNameChars), oneLine(strings.Join(keys, ","), 200))
		default:
			fmt.Fprintf(p.w, "step %-3d → finish (%s)\n", ev.Step, oneLine(deref(ev.Output), maxNameChars))
		}
	case gen.TraceEventTypeObservation:
		mark := "←"
		if deref(ev.IsError) {
			mark = "✗"
		}
		text := deref(ev.Output)
		if pr.Observation != nil {
			text = pr.Observation.Content
		}
		fmt.Fprintf(p.w, "step %-3d %s %s: %s (%s)\n", ev.Step, mark, oneLine(deref(ev.ToolName), maxNameChars), oneLine(text, 100), msText(ev.ToolDurationMs))
	case gen.TraceEventTypeModelFeedback:
		text := deref(ev.Output)
		if pr.Feedback != nil {
			text = pr.Feedback.Message
		}
		what := "invalid model output"
		if ev.FeedbackKind != nil && *ev.FeedbackKind == gen.FeedbackKindStuckWarning {
			what = "stuck warning"
		}
		fmt.Fprintf(p.w, "step %-3d ✗ %s: %s\n", ev.Step, what, oneLine(text, 120))
	case gen.TraceEventTypeHistoryCompacted:
		if ev.ContextWindow != nil {
			fmt.Fprintf(p.w, "step %-3d ⇣ context window learned: %d tokens (from the provider's error)\n", ev.Step, *ev.ContextWindow)
		}
		how := ""
		if deref(ev.Summarized) {
			how = ", older turns summarized"
		}
		fmt.Fprintf(p.w, "step %-3d ⇣ history compacted: %d outputs elided%s, %d → %d bytes\n", ev.Step, deref(ev.ItemsElided), how, deref(ev.BytesBefore), deref(ev.BytesAfter))
	case gen.TraceEventTypeFinishRejected:
		fmt.Fprintf(p.w, "step %-3d ✗ finish rejected: the check exited %d (%s)\n", ev.Step, deref(ev.ExitCode), msText(ev.ToolDurationMs))
	}
}

// printResult prints how a run ended, for a person.
func printResult(w io.Writer, res *gen.RunResult, tracePath string) {
	if res.Patch != nil && *res.Patch != "" {
		fmt.Fprintf(w, "\npatch:\n%s", *res.Patch)
		if !strings.HasSuffix(*res.Patch, "\n") {
			fmt.Fprintln(w)
		}
	}
	steps := "steps"
	if res.StepsUsed == 1 {
		steps = "step"
	}
	fmt.Fprintf(w, "\nresult: %s after %d %s\n", res.ExitReason, res.StepsUsed, steps)
	if res.Answer != nil {
		fmt.Fprintf(w, "answer: %s\n", *res.Answer)
	}
	if res.Check != nil {
		fmt.Fprintf(w, "check:  exit code %d\n", res.Check.ExitCode)
	}
	if res.Usage != nil {
		fmt.Fprintf(w, "tokens: %d in, %d out\n", res.Usage.InputTokens, res.Usage.OutputTokens)
	}
	if res.Error != nil {
		fmt.Fprintf(w, "error:  %s%s\n", *res.Error, raisedBy[res.ExitReason])
	}
	if tracePath != "" {
		fmt.Fprintf(w, "trace:  %s\n", tracePath)
	}
}

// raisedBy names the flag that raises the budget a run ended on: each of
// these reasons ends a run only when its budget ran out.
var raisedBy = map[gen.ExitReason]string{
	gen.ExitReasonMaxStepsExceeded:    " (--max-steps raises it)",
	gen.ExitReasonInvalidModelOutput:  " (--max-steps raises it)",
	gen.ExitReasonCheckFailed:         " (--max-steps raises it)",
	gen.ExitReasonTokenBudgetExceeded: " (--token-budget raises it)",
}

// writeJSON encodes v to w, each level indented by indent (none: one
// line), for a person: &, < and > stay as they are.
func writeJSON(w io.Writer, v any, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// compactJSON is v as one line of JSON (writeJSON).
func compactJSON(v any) string {
	var b strings.Builder
	if err := writeJSON(&b, v, ""); err != nil {
		return "?"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// maxNameChars bounds a tool name or an argument key in a progress line;
// a summary (`chars=N;sha256=HEX`, at most 98 characters) fits.
const maxNameChars = 100

// oneLine flattens s to one line of at most n characters, with control
// characters (which could drive the terminal) shown as visible escapes
// (termsafe.Line).
func oneLine(s string, n int) string {
	return clip(termsafe.Line(strings.Join(strings.Fields(s), " ")), n)
}

// clip cuts s to its first n characters and "…" when it is longer.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func msText(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", *v)
}

// deref is *p, or T's zero value when p is nil.
func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// docList names the project docs files a run read, with their sizes and
// what was left out.
func docList(docs []gen.ProjectDoc) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		note := fmt.Sprintf("%d bytes", d.Size)
		switch {
		case d.Refused != nil:
			note = "refused: " + oneLine(*d.Refused, 100)
		case deref(d.Cut):
			note += ", cut to fit --project-docs-limit"
		}
		parts[i] = fmt.Sprintf("%s (%s)", oneLine(d.Path, 200), note)
	}
	return strings.Join(parts, ", ")
}
