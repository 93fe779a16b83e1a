package telemetry_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/telemetry"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recordSpans returns a Telemetry whose spans go to an in-memory exporter,
// synchronously, in the order they end.
func recordSpans(t *testing.T, content bool) (*telemetry.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return &telemetry.Telemetry{Tracer: tp.Tracer(telemetry.TracerName), Content: content}, exp
}

// spanLines renders spans, in the order they ended, as "name kind
// parent=NAME status attributes" with the attributes sorted; it also
// checks that every span lies within its parent's time and trace.
func spanLines(t *testing.T, spans tracetest.SpanStubs) []string {
	t.Helper()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	var out []string
	for _, s := range spans {
		parent := "-"
		if p, ok := byID[s.Parent.SpanID()]; ok {
			parent = p.Name
			if p.SpanContext.TraceID() != s.SpanContext.TraceID() {
				t.Errorf("%s is not in its parent's trace", s.Name)
			}
			if s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime) {
				t.Errorf("%s [%v, %v] is outside its parent %s [%v, %v]", s.Name, s.StartTime, s.EndTime, p.Name, p.StartTime, p.EndTime)
			}
		} else if s.Parent.IsValid() {
			parent = "remote:" + s.Parent.SpanID().String()
		}
		if s.EndTime.Before(s.StartTime) {
			t.Errorf("%s ends before it starts", s.Name)
		}
		var attrs []string
		for _, a := range s.Attributes {
			attrs = append(attrs, string(a.Key)+"="+a.Value.String())
		}
		slices.Sort(attrs)
		status := s.Status.Code.String()
		if s.Status.Description != "" {
			status += "(" + s.Status.Description + ")"
		}
		out = append(out, fmt.Sprintf("%s %s parent=%s %s %s", s.Name, s.SpanKind, parent, status, strings.Join(attrs, " ")))
	}
	return out
}

// TestSpanTree: the exact span tree of a scripted run — one invoke_agent
// span, a chat span per model call, an execute_tool span per tool call
// (a tool the run does not offer is named other), a span per completion
// check — with the GenAI attributes and error statuses.
func TestSpanTree(t *testing.T) {
	tel, exp := recordSpans(t, false)
	runScripted(t, tel, telemetry.RunInfo{Provider: "openai", Model: "gpt-test"})
	model := "gen_ai.provider.name=openai gen_ai.request.model=gpt-test"
	chat := "chat gpt-test client parent=invoke_agent Unset gen_ai.operation.name=chat " + model + " gen_ai.usage.input_tokens=10 gen_ai.usage.output_tokens=5"
	want := []string{
		chat,
		"execute_tool calculator internal parent=invoke_agent Unset gen_ai.operation.name=execute_tool gen_ai.tool.call.id=c1 gen_ai.tool.name=calculator",
		"execute_tool other internal parent=invoke_agent Error(unknown_tool) error.type=unknown_tool gen_ai.operation.name=execute_tool gen_ai.tool.call.id=c2 gen_ai.tool.name=other",
		"chat gpt-test client parent=invoke_agent Error(invalid_model_output) error.type=invalid_model_output gen_ai.operation.name=chat " + model + " gen_ai.usage.input_tokens=10 gen_ai.usage.output_tokens=5",
		chat,
		"completion_check internal parent=invoke_agent Error(the completion check failed) error.type=failed specloop.check.exit_code=1 specloop.check.passed=false",
		chat,
		"execute_tool calculator internal parent=invoke_agent Error(division_by_zero) error.type=division_by_zero gen_ai.operation.name=execute_tool gen_ai.tool.call.id=c3 gen_ai.tool.name=calculator",
		chat,
		"completion_check internal parent=invoke_agent Unset specloop.check.exit_code=0 specloop.check.passed=true",
		"invoke_agent internal parent=- Unset gen_ai.conversation.id=run-1 gen_ai.operation.name=invoke_agent " + model +
			" gen_ai.usage.input_tokens=50 gen_ai.usage.output_tokens=25 specloop.exit_reason=finished specloop.steps_used=5",
	}
	if diff := cmp.Diff(want, spanLines(t, exp.GetSpans())); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

// TestSpanModelError: a model call that fails ends the run's span and its
// own chat span with an error status.
func TestSpanModelError(t *testing.T) {
	tel, exp := recordSpans(t, false)
	runFailing(t, tel, telemetry.RunInfo{Provider: "anthropic", Model: "claude-test"})
	lines := spanLines(t, exp.GetSpans())
	want := []string{
		"chat claude-test client parent=invoke_agent Unset gen_ai.operation.name=chat gen_ai.provider.name=anthropic gen_ai.request.model=claude-test",
		"execute_tool calculator internal parent=invoke_agent Unset gen_ai.operation.name=execute_tool gen_ai.tool.call.id=f1 gen_ai.tool.name=calculator",
		"chat claude-test client parent=invoke_agent Error(model_error) error.type=model_error gen_ai.operation.name=chat gen_ai.provider.name=anthropic gen_ai.request.model=claude-test",
		"invoke_agent internal parent=- Error(model_error) error.type=model_error gen_ai.conversation.id=run-2 gen_ai.operation.name=invoke_agent gen_ai.provider.name=anthropic gen_ai.request.model=claude-test specloop.exit_reason=model_error specloop.steps_used=2",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

// contentKeys are the attributes that carry what a model or a tool wrote.
var contentKeys = []attribute.Key{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}

// TestSpanContent: no span carries content unless Content is set; with it,
// tool spans carry the call's arguments and result.
func TestSpanContent(t *testing.T) {
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprint("content=", content), func(t *testing.T) {
			tel, exp := recordSpans(t, content)
			runScripted(t, tel, telemetry.RunInfo{Provider: "openai", Model: "gpt-test"})
			found := map[attribute.Key]string{}
			for _, s := range exp.GetSpans() {
				for _, a := range s.Attributes {
					if slices.Contains(contentKeys, a.Key) {
						found[a.Key] += a.Value.AsString() + ";"
					}
					if strings.Contains(a.Value.String(), "moon") || strings.Contains(a.Value.String(), "secret check output") {
						if !content {
							t.Errorf("%s: %s carries content: %s", s.Name, a.Key, a.Value.String())
						}
					}
				}
			}
			if !content {
				if len(found) > 0 {
					t.Errorf("content attributes without Content: %v", found)
				}
				return
			}
			args, res := found["gen_ai.tool.call.arguments"], found["gen_ai.tool.call.result"]
			if !strings.Contains(args, `"operation":"divide"`) || !strings.Contains(args, `"target":"moon"`) || !strings.Contains(res, "launch_missiles") {
				t.Errorf("arguments %q, results %q: want every call's", args, res)
			}
		})
	}
}

// TestSpanParent: the run's span is a child of the span given as Parent
// (the request that created the run), in its trace.
func TestSpanParent(t *testing.T) {
	tel, exp := recordSpans(t, false)
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	runScripted(t, tel, telemetry.RunInfo{Provider: "script", Parent: parent})
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() != parent.TraceID() {
			t.Errorf("%s is in trace %s, want %s", s.Name, s.SpanContext.TraceID(), parent.TraceID())
		}
		if s.Name == "invoke_agent" && s.Parent.SpanID() != parent.SpanID() {
			t.Errorf("invoke_agent's parent is %s, want %s", s.Parent.SpanID(), parent.SpanID())
		}
	}
}
