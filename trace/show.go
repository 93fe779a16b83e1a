package trace

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
)

// Show writes the events for a person to read, one line each, in file order:
// run, step, event, then whatever the event carries.
func Show(w io.Writer, log *Log) error {
	for i := range log.Events {
		if _, err := io.WriteString(w, Format(&log.Events[i])+"\n"); err != nil {
			return err
		}
	}
	if log.Torn != nil {
		_, err := fmt.Fprintf(w, "(line %d is torn: %d bytes of an event that was being written when the writer stopped)\n", log.Torn.Line, log.Torn.Bytes)
		return err
	}
	return nil
}

// Format renders one event on one line.
func Format(ev *gen.TraceEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  run=%s  step=%-3d %-15s", ev.Time.Format("15:04:05.000"), shown(ev.RunId), ev.Step, shown(string(ev.EventType)))
	add := func(k, v string) { b.WriteString("  " + k + "=" + v) }
	addShown(add, "action", ev.ActionType)
	addShown(add, "tool", ev.ToolName)
	addShown(add, "call", ev.CallId)
	if ev.ArgumentKeys != nil {
		keys := make([]string, len(*ev.ArgumentKeys))
		for i, k := range *ev.ArgumentKeys {
			keys[i] = shown(k)
		}
		add("args", "["+strings.Join(keys, ",")+"]")
	}
	if ev.IsError != nil && *ev.IsError {
		add("error", "yes")
	}
	addShown(add, "code", ev.ErrorCode)
	addShown(add, "feedback", ev.FeedbackKind)
	addShown(add, "decision", ev.Decision)
	if ev.ExitCode != nil {
		add("exit_code", strconv.Itoa(*ev.ExitCode))
	}
	addShown(add, "exit", ev.ExitReason)
	if ev.StepsUsed != nil {
		add("steps", strconv.Itoa(*ev.StepsUsed))
	}
	addShown(add, "input", ev.InputSummary)
	addShown(add, "output", ev.Output)
	if ev.ItemsElided != nil {
		add("elided", strconv.Itoa(*ev.ItemsElided))
	}
	if ev.BytesBefore != nil && ev.BytesAfter != nil {
		add("bytes", fmt.Sprintf("%d->%d", *ev.BytesBefore, *ev.BytesAfter))
	}
	if ev.TokensBefore != nil && ev.TokensAfter != nil {
		add("est_tokens", fmt.Sprintf("%d->%d", *ev.TokensBefore, *ev.TokensAfter))
	}
	if ev.Summarized != nil && *ev.Summarized {
		add("summarized", "yes")
	}
	if ev.Usage != nil {
		add("tokens", fmt.Sprintf("%d+%d", ev.Usage.InputTokens, ev.Usage.OutputTokens))
	}
	for _, d := range []struct {
		k string
		v *float64
	}{{"model", ev.ModelDurationMs}, {"tool", ev.ToolDurationMs}, {"total", ev.DurationMs}} {
		if d.v != nil {
			add(d.k+"_ms", strconv.FormatFloat(*d.v, 'f', 3, 64))
		}
	}
	if ev.Error != nil {
		add("error", strconv.Quote(*ev.Error))
	}
	return b.String()
}

// addShown adds the field k, shown, when v is set.
func addShown[T ~string](add func(k, v string), k string, v *T) {
	if v != nil {
		add(k, shown(string(*v)))
	}
}

// maxShown bounds a name or summary in a line of Show: a summary
// (`chars=N;sha256=HEX`, at most 98 characters) fits. The trace this
// package writes holds nothing longer, but a file may come from elsewhere.
const maxShown = 100

// shown makes a name, an id or a summary from a trace safe to print on one
// line of a terminal: control characters (and bidi controls) are shown as
// visible escapes (termsafe.Line) and it is clipped to maxShown characters.
// (Read checks an event against the spec, so the enum fields hold one of
// their values; Format shows them safely whatever it is given.)
func shown(s string) string {
	s = termsafe.Line(s)
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	return string([]rune(s)[:maxShown]) + "…"
}
