package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
)

func p[T any](v T) *T { return &v }

// TestWrittenEventsParse: a line the Writer writes is one line that
// ParseEvent reads back, with text that needs escaping, HTML characters
// kept as they are and invalid UTF-8 replaced.
func TestWrittenEventsParse(t *testing.T) {
	ev := gen.TraceEvent{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeModelAction, Time: time.Now().UTC(),
		ActionType: p(gen.ActionTypeToolCall), ToolName: p("calculator"), ArgumentKeys: &[]string{"left"},
		ModelDurationMs: p(0.25), RawResponse: p("line\nbreak \"quoted\" <b>&</b> é \xff")}
	var buf bytes.Buffer
	if err := NewWriter(&buf, SyncNone).Emit(&ev); err != nil {
		t.Fatal(err)
	}
	line := buf.Bytes()
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	if !bytes.Contains(line, []byte("<b>&</b>")) {
		t.Fatalf("HTML characters are escaped: %s", line)
	}
	got, err := ParseEvent(bytes.TrimSpace(line))
	if err != nil {
		t.Fatalf("ParseEvent(%s): %v", line, err)
	}
	if got.RunId != ev.RunId || !got.Time.Equal(ev.Time) || *got.RawResponse != "line\nbreak \"quoted\" <b>&</b> é \uFFFD" || *got.ModelDurationMs != 0.25 {
		t.Fatalf("round trip = %+v", got)
	}
}

// TestEncodeErrors: an event JSON cannot represent is an error and writes
// nothing, so the trace never holds a partial line.
func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		ev   gen.TraceEvent
	}{
		{"NaN", gen.TraceEvent{DurationMs: p(math.NaN())}},
		{"infinity", gen.TraceEvent{ToolDurationMs: p(math.Inf(-1))}},
		{"year out of range", gen.TraceEvent{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := json.Marshal(&tt.ev); err == nil {
				t.Fatal("encoding/json accepts the event")
			}
			var buf bytes.Buffer
			w := NewWriter(&buf, SyncNone)
			if err := w.Emit(&tt.ev); err == nil || !strings.Contains(err.Error(), "trace: encode") {
				t.Fatalf("Emit error = %v", err)
			}
			if buf.Len() != 0 {
				t.Fatalf("a failed event wrote %q", buf.String())
			}
		})
	}
}

// BenchmarkWriterEmit is the cost of tracing one event: encoding it
// (discard) and, in addition, the write(2) of its line to a file. Each
// event is one write, so a step that calls a tool (a model_action and an
// observation) pays for two.
//
//	go test ./trace -run '^$' -bench WriterEmit -benchmem
func BenchmarkWriterEmit(b *testing.B) {
	ev := gen.TraceEvent{RunId: "0123456789abcdef", Step: 12, EventType: gen.TraceEventTypeObservation, Time: time.Now().UTC(),
		ToolName: p("calculator"), Output: p(Summary("84")), IsError: p(false), ToolDurationMs: p(0.0123)}
	b.Run("discard", func(b *testing.B) {
		w := NewWriter(io.Discard, SyncNone)
		b.ReportAllocs()
		for b.Loop() {
			if err := w.Emit(&ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("file", func(b *testing.B) {
		w, err := Create(filepath.Join(b.TempDir(), "t.jsonl"), SyncNone)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		b.ReportAllocs()
		for b.Loop() {
			if err := w.Emit(&ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
