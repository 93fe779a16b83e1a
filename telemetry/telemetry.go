// Package telemetry turns what specloop runs do into Prometheus metrics and
// OpenTelemetry GenAI spans, from the events agent.Run traces.
//
// A run is observed through agent.Options: Telemetry.Observe returns a Run
// whose Emit wraps the run's agent.Tracer and sees every trace event in
// order, with its time and durations; Run.Check wraps the completion check
// to see its result and timing. From them the Run counts the run's model
// calls, tool calls, tokens and checks (Metrics) and builds its span tree
// after the fact, with explicit start and end times:
//
//	invoke_agent                  INTERNAL, one per run
//	├── chat {model}              CLIENT, one per model call
//	├── execute_tool {tool}       INTERNAL, one per tool call
//	└── completion_check          INTERNAL, one per check
//
// Metric label values come only from the spec (its enums, operationIds
// and x-sandbox-denials) and the tools a run offers, so their number is
// bounded whatever a model writes; of the tools not built in (whose names
// an MCP server chooses) at most MaxRunToolLabels a run and MaxToolLabels
// in all have a label of their own. A span's tool name is a tool the run
// offers or other, and its model name is the one the run was configured
// with. Spans carry no content (messages, tool arguments, results) unless
// Telemetry.Content is set: the same privacy rule as the JSONL trace.
package telemetry

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry is what a process records about its runs. The zero value
// records nothing; a nil *Telemetry too.
type Telemetry struct {
	// Metrics, when set, count what runs do.
	Metrics *Metrics
	// Tracer, when set, receives the spans of each run.
	Tracer trace.Tracer
	// Content adds tool call arguments (gen_ai.tool.call.arguments) and
	// results (gen_ai.tool.call.result) to the spans. Off by default: it
	// breaks the trace's privacy guarantee.
	Content bool
}

// RunInfo is what a Run knows about a run besides its events.
type RunInfo struct {
	// Provider is the model provider: a value of the spec's ModelConfig
	// provider (script, openai, anthropic); anything else is counted as
	// other.
	Provider string
	// Model is the provider's model name; empty when there is none (a
	// scripted model).
	Model string
	// Parent is the span the run's span is a child of, such as the
	// remote span of the HTTP request that created the run; the zero
	// value makes the run's span a root.
	Parent trace.SpanContext
}

// Attribute keys of specloop's own span attributes.
const (
	attrExitReason   = attribute.Key("specloop.exit_reason")
	attrStepsUsed    = attribute.Key("specloop.steps_used")
	attrCheckPassed  = attribute.Key("specloop.check.passed")
	attrCheckExit    = attribute.Key("specloop.check.exit_code")
	spanCheck        = "completion_check"
	contentMaxLength = 16 << 10
)

// Run observes one run. Pass it (or what it wraps) in agent.Options: Run
// as the Trace, Check(opts.Check) as the Check and, with content enabled,
// Tools(opts.Tools) as the Tools. Its methods are called by the run's loop,
// one at a time.
type Run struct {
	t    *Telemetry
	info RunInfo
	next agent.Tracer

	m          *Metrics          // nil without metrics
	provider   string            // the provider's label
	toolLabels map[string]string // a tool's metric label in this run, once chosen
	ownLabels  int               // the tools not built in with a label of their own

	ctx   context.Context // the run's span's context
	span  trace.Span      // the run's span; nil before run_started or without a tracer
	last  time.Time       // the end of the last thing the run did
	tools []string        // the tools the run offers, from run_started
	call  *callContent    // the content of the tool call whose observation comes next
}

type callContent struct {
	arguments string
	result    string
}

// Observe returns the observer of one run; its Emit forwards every event to
// next (nil: none).
func (t *Telemetry) Observe(info RunInfo, next agent.Tracer) *Run {
	r := &Run{t: t, info: info, next: next, provider: label(gen.ModelProviders(), info.Provider), toolLabels: map[string]string{}}
	if t != nil {
		r.m = t.Metrics
	}
	return r
}

// Emit forwards ev to the wrapped tracer, then records it: the metrics it
// counts and the spans it completes. An error of the wrapped tracer is
// returned as it is: the run ends, and the event still counts.
func (r *Run) Emit(ev *gen.TraceEvent) error {
	var err error
	if r.next != nil {
		err = r.next.Emit(ev)
	}
	switch ev.EventType {
	case gen.TraceEventTypeRunStarted:
		if ev.ToolNames != nil {
			r.tools = slices.Clone(*ev.ToolNames)
		}
		r.started(ev)
	case gen.TraceEventTypeModelAction:
		if ev.ModelDurationMs != nil { // the turn's first action: one model call
			r.modelCall(ev.Time.Add(-msDuration(ev.ModelDurationMs)), ev.Time, ev.Usage, outcomeOK)
		}
	case gen.TraceEventTypeModelFeedback:
		if ev.FeedbackKind != nil && *ev.FeedbackKind == gen.FeedbackKindInvalidModelOutput {
			r.modelCall(ev.Time.Add(-msDuration(ev.ModelDurationMs)), ev.Time, ev.Usage, string(gen.FeedbackKindInvalidModelOutput))
		}
	case gen.TraceEventTypeObservation:
		r.toolCall(ev)
	case gen.TraceEventTypeRunFinished:
		r.finished(ev)
		return err
	}
	if !ev.Time.Before(r.last) {
		r.last = ev.Time
	}
	return err
}

// msDuration is a duration in milliseconds of an event, 0 when absent.
func msDuration(ms *float64) time.Duration {
	if ms == nil {
		return 0
	}
	return time.Duration(*ms * float64(time.Millisecond))
}

// Check wraps a completion check so that the Run sees each result and how
// long the check took. The wrapper passes the check's agent.Sandboxed
// ability on (nil for a check without one). A nil check stays nil.
func (r *Run) Check(c agent.Checker) agent.Checker {
	if c == nil || r.t == nil || (r.m == nil && r.t.Tracer == nil) {
		return c
	}
	return timedCheck{r, c}
}

// Tools wraps a tool runtime so that the spans of its calls carry their
// arguments and results; without Content (or a tracer) it returns rt. The
// wrapper keeps the runtime's agent.Patcher and agent.Sandboxed abilities.
func (r *Run) Tools(rt agent.ToolRuntime) agent.ToolRuntime {
	if rt == nil || r.t == nil || !r.t.Content || r.t.Tracer == nil {
		return rt
	}
	return contentTools{r: r, ToolRuntime: rt}
}

type timedCheck struct {
	r *Run
	c agent.Checker
}

func (c timedCheck) Check(ctx context.Context) (gen.CheckResult, error) {
	t0 := time.Now()
	res, err := c.c.Check(ctx)
	c.r.checked(t0, time.Now(), res, err)
	return res, err
}

func (c timedCheck) SandboxInfo() *gen.SandboxInfo {
	if s, ok := c.c.(agent.Sandboxed); ok {
		return s.SandboxInfo()
	}
	return nil
}

// contentTools records each call's arguments and result for the span of
// its observation, which the loop emits right after the call.
type contentTools struct {
	r *Run
	agent.ToolRuntime
}

func (c contentTools) Call(ctx context.Context, call *gen.ToolCall) (gen.Observation, error) {
	obs, err := c.ToolRuntime.Call(ctx, call)
	cc := &callContent{result: obs.Content}
	if b, jerr := json.Marshal(call.Arguments); jerr == nil {
		cc.arguments = string(b)
	}
	c.r.call = cc
	return obs, err
}

func (c contentTools) Patch(ctx context.Context) (string, error) {
	if p, ok := c.ToolRuntime.(agent.Patcher); ok {
		return p.Patch(ctx)
	}
	return "", nil
}

func (c contentTools) SandboxInfo() *gen.SandboxInfo {
	if s, ok := c.ToolRuntime.(agent.Sandboxed); ok {
		return s.SandboxInfo()
	}
	return nil
}

// checked records a completion check that ran from start to end.
func (r *Run) checked(start, end time.Time, res gen.CheckResult, err error) {
	result := checkFailed
	switch {
	case err != nil:
		result = checkError
	case res.Passed:
		result = checkPassed
	}
	if r.m != nil {
		r.m.counter(famChecks, "result", result).Inc()
	}
	if r.span == nil {
		return
	}
	_, s := r.t.Tracer.Start(r.ctx, spanCheck, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(start))
	if err == nil {
		s.SetAttributes(attrCheckPassed.Bool(res.Passed), attrCheckExit.Int(res.ExitCode))
	}
	if result != checkPassed {
		s.SetAttributes(semconv.ErrorTypeKey.String(result))
		s.SetStatus(codes.Error, "the completion check "+result)
	}
	s.End(trace.WithTimestamp(end))
	r.last = end
}

// started starts the run's span, with a tracer.
func (r *Run) started(ev *gen.TraceEvent) {
	r.last = ev.Time
	if r.t == nil || r.t.Tracer == nil {
		return
	}
	parent := context.Background()
	if r.info.Parent.IsValid() {
		parent = trace.ContextWithRemoteSpanContext(parent, r.info.Parent)
	}
	r.ctx, r.span = r.t.Tracer.Start(parent, semconv.GenAIOperationNameInvokeAgent.Value.AsString(),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(ev.Time),
		trace.WithAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIConversationID(ev.RunId)),
		trace.WithAttributes(r.modelAttributes()...))
}

// modelAttributes are the provider and model of the run's model.
func (r *Run) modelAttributes() []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.GenAIProviderNameKey.String(r.provider)}
	if r.info.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(r.info.Model))
	}
	return attrs
}

// modelCall records a model call from start to end with its usage and
// outcome: ok, invalid_model_output or model_error.
func (r *Run) modelCall(start, end time.Time, u *gen.Usage, outcome string) {
	if r.m != nil {
		r.m.counter(famModelCalls, "provider", r.provider, "outcome", outcome).Inc()
		if u != nil {
			r.m.counter(famTokens, "provider", r.provider, "kind", semconv.GenAITokenTypeInput.Value.AsString()).AddInt64(u.InputTokens)
			r.m.counter(famTokens, "provider", r.provider, "kind", semconv.GenAITokenTypeOutput.Value.AsString()).AddInt64(u.OutputTokens)
		}
	}
	if r.span == nil {
		return
	}
	name := semconv.GenAIOperationNameChat.Value.AsString()
	if r.info.Model != "" {
		name += " " + r.info.Model
	}
	_, s := r.t.Tracer.Start(r.ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithAttributes(semconv.GenAIOperationNameChat), trace.WithAttributes(r.modelAttributes()...))
	if u != nil {
		s.SetAttributes(semconv.GenAIUsageInputTokens(int(u.InputTokens)), semconv.GenAIUsageOutputTokens(int(u.OutputTokens)))
	}
	if outcome != outcomeOK {
		s.SetAttributes(semconv.ErrorTypeKey.String(outcome))
		s.SetStatus(codes.Error, outcome)
	}
	s.End(trace.WithTimestamp(end))
}

// toolCall records the tool call whose observation ev is. Its span's tool
// name is the name when the run offers the tool, other for anything else
// (a name the model made up); its metric label is capped (metricTool).
func (r *Run) toolCall(ev *gen.TraceEvent) {
	cc := r.call
	r.call = nil
	name := labelOther
	if ev.ToolName != nil && slices.Contains(r.tools, *ev.ToolName) {
		name = *ev.ToolName
	}
	outcome := toolOutcome(ev)
	if r.m != nil {
		r.m.counter(famToolCalls, "tool", r.metricTool(name), "outcome", outcome).Inc()
		if outcome != outcomeOK && ev.ErrorCode != nil && slices.Contains(gen.SandboxDenials(), *ev.ErrorCode) {
			r.m.counter(famSandboxDenials, "code", string(*ev.ErrorCode)).Inc()
		}
	}
	if r.span == nil {
		return
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name)}
	if ev.CallId != nil {
		attrs = append(attrs, semconv.GenAIToolCallID(*ev.CallId))
	}
	_, s := r.t.Tracer.Start(r.ctx, semconv.GenAIOperationNameExecuteTool.Value.AsString()+" "+name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(ev.Time.Add(-msDuration(ev.ToolDurationMs))), trace.WithAttributes(attrs...))
	if cc != nil && r.t.Content {
		s.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(textclip.Head(cc.arguments, contentMaxLength)), semconv.GenAIToolCallResultKey.String(textclip.Head(cc.result, contentMaxLength)))
	}
	if outcome != outcomeOK {
		s.SetAttributes(semconv.ErrorTypeKey.String(outcome))
		s.SetStatus(codes.Error, outcome)
	}
	s.End(trace.WithTimestamp(ev.Time))
}

// metricTool is the metric label of a tool the run offers (other already
// stands for any other): its name for a built-in tool; for another, its
// name while the run has given fewer than MaxRunToolLabels such names a
// label and the process has it or fewer than MaxToolLabels; other then.
func (r *Run) metricTool(name string) string {
	if name == labelOther || slices.Contains(specNames().builtin, name) {
		return name
	}
	if l, ok := r.toolLabels[name]; ok {
		return l
	}
	l := labelOther
	if r.ownLabels < MaxRunToolLabels && r.m.admitTool(name) {
		l = name
		r.ownLabels++
	}
	r.toolLabels[name] = l
	return l
}

// finished counts the run and ends its span (and the model call a
// model_error ended).
func (r *Run) finished(ev *gen.TraceEvent) {
	reason := gen.ExitReasonInternalError
	if ev.ExitReason != nil {
		reason = *ev.ExitReason
	}
	if reason == gen.ExitReasonModelError {
		r.modelCall(r.last, ev.Time, nil, string(gen.ExitReasonModelError))
	}
	if r.m != nil {
		r.m.RunEnded(ev)
	}
	if r.span == nil {
		return
	}
	exit := label(gen.ExitReasonValues(), reason)
	r.span.SetAttributes(attrExitReason.String(exit))
	if ev.StepsUsed != nil {
		r.span.SetAttributes(attrStepsUsed.Int(*ev.StepsUsed))
	}
	if ev.Usage != nil {
		r.span.SetAttributes(semconv.GenAIUsageInputTokens(int(ev.Usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(ev.Usage.OutputTokens)))
	}
	if reason != gen.ExitReasonFinished {
		r.span.SetAttributes(semconv.ErrorTypeKey.String(exit))
		r.span.SetStatus(codes.Error, exit)
	}
	r.span.End(trace.WithTimestamp(ev.Time))
	r.span = nil
}
