package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/specloop/specloop/gen"
)

// Render writes a transcript as a person reads it: the task, then step by
// step the model's own words, each tool call with its arguments and what
// it returned, feedback, compactions and approvals, then the check and how
// the run ended, with its patch. It writes what the entries hold; a caller
// that writes to a terminal guards the writer (termsafe.Guard).
func Render(w io.Writer, log *Log) error {
	r := NewRenderer(w)
	for i := range log.Entries {
		r.Entry(&log.Entries[i])
	}
	if log.Torn > 0 {
		r.printf("(line %d was cut short: the run's process stopped while writing it)\n", log.Torn)
	}
	return r.err
}

// Renderer renders entries one at a time, as Render does, for a reader
// that follows a live run.
type Renderer struct {
	w    io.Writer
	step int
	err  error
}

// NewRenderer renders to w.
func NewRenderer(w io.Writer) *Renderer { return &Renderer{w: w} }

// Entry renders e; it returns the first error writing to w.
func (r *Renderer) Entry(e *gen.TranscriptEntry) error {
	r.entry(e)
	return r.err
}

func (r *Renderer) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

// block prints text under a label, indented, each line of it.
func (r *Renderer) block(label, text string) {
	text = strings.TrimRight(text, "\n")
	if !strings.Contains(text, "\n") && len(label)+len(text) < 100 {
		r.printf("  %s %s\n", label, text)
		return
	}
	r.printf("  %s\n", label)
	for _, l := range strings.Split(text, "\n") {
		r.printf("      %s\n", l)
	}
}

func (r *Renderer) entry(e *gen.TranscriptEntry) {
	if e.Step > r.step {
		r.step = e.Step
		r.printf("\nstep %d\n", e.Step)
	}
	switch e.EventType {
	case gen.TraceEventTypeRunStarted:
		r.printf("run %s, started %s\n", e.RunId, e.Time.UTC().Format("2006-01-02 15:04:05 UTC"))
		if e.Task != nil {
			r.block("task:", *e.Task)
		}
		if e.ToolNames != nil {
			r.printf("  tools: %s\n", strings.Join(*e.ToolNames, ", "))
		}
	case gen.TraceEventTypeModelAction:
		if e.Text != nil && *e.Text != "" {
			r.block("model:", *e.Text)
		}
		if e.Action != nil {
			r.action(e.Action)
		}
	case gen.TraceEventTypeObservation:
		if o := e.Observation; o != nil {
			text := o.Content
			if e.Output != nil {
				text = *e.Output
			}
			label := "←"
			if o.IsError {
				label = "← error"
				if o.ErrorCode != nil {
					label += " (" + string(*o.ErrorCode) + ")"
				}
				label += ":"
			}
			r.block(label, text)
			if e.OutputTruncatedBytes != nil {
				r.printf("      [%d more bytes not kept]\n", *e.OutputTruncatedBytes)
			}
		}
	case gen.TraceEventTypeModelFeedback:
		if f := e.Feedback; f != nil {
			r.block("feedback ("+string(f.Kind)+"):", f.Message)
		}
	case gen.TraceEventTypeFinishRejected:
		r.check("finish rejected, check", e.Check)
	case gen.TraceEventTypeHistoryCompacted:
		if e.Summary != nil {
			r.block("history compacted; the model's summary:", *e.Summary)
		} else {
			r.printf("  history compacted\n")
		}
	case gen.TraceEventTypeApprovalRequested:
		r.printf("  approval asked: %s %s (call %s)\n", deref(e.ToolName), compact(e.Arguments), deref(e.CallId))
	case gen.TraceEventTypeApprovalDecided:
		line := fmt.Sprintf("approval: %s %s", deref((*string)(e.Decision)), deref(e.ToolName))
		if e.Reason != nil && *e.Reason != "" {
			line += ": " + *e.Reason
		}
		r.printf("  %s\n", line)
	case gen.TraceEventTypeRunFinished:
		r.finished(e)
	}
}

func (r *Renderer) action(a *gen.Action) {
	v, err := a.ValueByDiscriminator()
	if err != nil {
		r.printf("  → (an action of an unknown type)\n")
		return
	}
	switch a := v.(type) {
	case gen.ToolCall:
		r.block("→ "+a.ToolName, compact(&a.Arguments))
	case gen.Finish:
		r.block("finish:", a.Answer)
	}
}

func (r *Renderer) check(label string, c *gen.CheckResult) {
	if c == nil {
		return
	}
	verdict := "passed"
	if !c.Passed {
		verdict = fmt.Sprintf("failed (exit %d)", c.ExitCode)
	}
	if c.OutputTail != nil && *c.OutputTail != "" {
		r.block(label+" "+verdict+":", *c.OutputTail)
	} else {
		r.printf("  %s %s\n", label, verdict)
	}
}

func (r *Renderer) finished(e *gen.TranscriptEntry) {
	res := e.Result
	if res == nil {
		r.printf("\nthe run ended\n")
		return
	}
	r.printf("\n%s after %d steps\n", res.ExitReason, res.StepsUsed)
	r.check("check", res.Check)
	if res.Answer != nil {
		r.block("answer:", *res.Answer)
	}
	if res.Error != nil {
		r.block("error:", *res.Error)
	}
	if res.Patch != nil && *res.Patch != "" {
		r.block("patch:", *res.Patch)
	}
}

// compact is arguments as one line of JSON.
func compact(args *map[string]any) string {
	if args == nil {
		return "{}"
	}
	b, err := json.Marshal(*args)
	if err != nil {
		return "(arguments that do not encode)"
	}
	return string(b)
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
