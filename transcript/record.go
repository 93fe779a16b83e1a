package transcript

import (
	"bytes"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// Recorder writes a run's transcript from its progress: pass Observe as
// the loop's Observer (agent.Options.Observer, runner.Spec.Observer),
// which sees every event with the values the trace only summarizes.
type Recorder struct {
	w    Sink
	task string
}

// Sink takes a transcript's entries in order: a *Writer, or an engine's
// queue that writes them later (package temporal).
type Sink interface {
	Write(gen.TranscriptEntry) error
}

// callWriter is a Sink that takes a tool call's entry with the call
// beside it, to encode the call as the entry's action itself (a *Writer).
type callWriter interface {
	writeCall(e gen.TranscriptEntry, call *gen.ToolCall) error
}

// NewRecorder records into w the run of the task prompt (the progress of
// run_started carries only its summary).
func NewRecorder(w Sink, task string) *Recorder { return &Recorder{w: w, task: task} }

// Observe records one event. It reads no clock (the entry's time is the
// event's), so a workflow may call it. A failed write does not stop the
// run: a Writer keeps the error, drops the entries after it and returns it
// from Close.
func (r *Recorder) Observe(p agent.Progress) {
	if p.Event == nil {
		return
	}
	ev := p.Event
	e := gen.TranscriptEntry{RunId: ev.RunId, Step: ev.Step, EventType: ev.EventType, Time: ev.Time, Usage: ev.Usage}
	switch ev.EventType {
	case gen.TraceEventTypeRunStarted:
		e.Task, e.ToolNames = &r.task, ev.ToolNames
	case gen.TraceEventTypeModelAction:
		var a gen.Action
		switch {
		case p.ToolCall != nil:
			// The union's wire form is the call's own, its type set (what
			// FromToolCall makes through a JSON merge, for a fifth of a
			// step's cost).
			call := p.ToolCall
			if call.Type != gen.ToolCallTypeToolCall {
				c := *call
				c.Type = gen.ToolCallTypeToolCall
				call = &c
			}
			e.Text = p.Text()
			if cw, ok := r.w.(callWriter); ok {
				_ = cw.writeCall(e, call) // the call encoded once, in the entry
				return
			}
			// Encoded as the Writer encodes it, with <, > and & as they
			// are; arguments that do not encode: an action of null.
			b, err := trace.EncodeLine(call)
			if err != nil {
				b = nil
			}
			_ = a.UnmarshalJSON(bytes.TrimSuffix(b, []byte("\n")))
			e.Action = &a
		case p.Finish != nil:
			_ = a.FromFinish(*p.Finish) // a generated union always takes its member
			e.Action = &a
		}
		e.Text = p.Text()
	case gen.TraceEventTypeObservation:
		// The observation as the model saw it, and the tool's whole
		// output beside it when the loop capped it.
		e.Observation = p.Seen
		if e.Observation == nil {
			e.Observation = p.Observation
		}
		if p.Observation != nil && p.Observation.Content != e.Observation.Content {
			e.Output = &p.Observation.Content
		}
	case gen.TraceEventTypeModelFeedback:
		e.Feedback = p.Feedback
	case gen.TraceEventTypeFinishRejected:
		e.Feedback, e.Check = p.Feedback, p.Check
	case gen.TraceEventTypeHistoryCompacted:
		if p.Summary != "" {
			e.Summary = ptr(p.Summary)
		}
		items := make([]gen.HistoryItem, 0, p.History.Len())
		for _, it := range p.History.All() {
			w, err := it.Wire()
			if err != nil {
				continue // an empty item: not one the loop records
			}
			items = append(items, w)
		}
		e.History = &items
	case gen.TraceEventTypeApprovalRequested:
		e.ToolName, e.CallId = ev.ToolName, ev.CallId
		if p.ToolCall != nil {
			e.Arguments = &p.ToolCall.Arguments
		}
		if p.ApprovalReason != "" {
			e.Reason = ptr(p.ApprovalReason)
		}
	case gen.TraceEventTypeApprovalDecided:
		e.ToolName, e.CallId, e.Decision = ev.ToolName, ev.CallId, ev.Decision
		if p.ApprovalReason != "" {
			e.Reason = ptr(p.ApprovalReason)
		}
	case gen.TraceEventTypeRunFinished:
		e.Result = p.Result
	}
	_ = r.w.Write(e)
}

// ptr points to a copy of v (a pointer into p would move the whole
// Progress to the heap, for every event).
func ptr[T any](v T) *T { return &v }
