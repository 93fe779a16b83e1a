package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/specloop/specloop/gen"
)

// stdJSON is what encoding/json writes for v with HTML escaping off, the
// trace's format before the planned encoder existed.
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestEventEncoderIsPlanned(t *testing.T) {
	if eventEncoder() == nil {
		_, err := newEncoder(reflect.TypeFor[gen.TraceEvent]())
		t.Fatalf("gen.TraceEvent falls back to encoding/json: %v", err)
	}
}

func p[T any](v T) *T { return &v }

func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	when := time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.UTC)
	full := gen.TraceEvent{
		ActionType: p(gen.ActionTypeToolCall), ArgumentKeys: &[]string{"left", "operation", "right"},
		DurationMs: p(12.5), Error: p("the step budget of 5 ran out"), ErrorCode: p("division_by_zero"),
		EventType: gen.TraceEventTypeObservation, ExitCode: p(-3), ExitReason: p(gen.ExitReasonCheckFailed),
		FeedbackKind: p(gen.FeedbackKindFinishRejected), InputSummary: p(Summary("task")), IsError: p(false),
		MaxSteps: p(10), ModelDurationMs: p(0.000123), Output: p(Summary("84")),
		RawResponse: p("{\"a\":\"<b>&\\u2028\u2028\x00\x1f\x7f\xff\"}\n\t\r\b\f"), RunId: "0123456789abcdef", Step: 7,
		StepsUsed: p(3), Time: when, ToolDurationMs: p(1e21), ToolName: p("calculator"),
		ToolNames: &[]string{}, Usage: &gen.Usage{InputTokens: 1 << 40, OutputTokens: 0},
	}
	tests := []struct {
		name string
		ev   gen.TraceEvent
	}{
		{"required fields only", gen.TraceEvent{RunId: "r1", EventType: gen.TraceEventTypeRunStarted, Time: when}},
		{"zero value", gen.TraceEvent{}},
		{"every field", full},
		{"nil slice behind a pointer", gen.TraceEvent{RunId: "r", ToolNames: new([]string), ArgumentKeys: &[]string{""}}},
		{"local time zone", gen.TraceEvent{RunId: "r", Time: when.In(time.FixedZone("x", -5*3600-30*60))}},
		{"negative zero and tiny numbers", gen.TraceEvent{RunId: "r", DurationMs: p(math.Copysign(0, -1)), ModelDurationMs: p(5e-324), ToolDurationMs: p(-1e-7)}},
		{"large numbers", gen.TraceEvent{RunId: "r", DurationMs: p(math.MaxFloat64), ModelDurationMs: p(1e20), ToolDurationMs: p(123456789.125)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendEvent([]byte("prefix"), &tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]byte("prefix"), stdJSON(t, &tt.ev)...)
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestEncodedEventsParse(t *testing.T) {
	ev := gen.TraceEvent{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeModelAction, Time: time.Now().UTC(),
		ActionType: p(gen.ActionTypeToolCall), ToolName: p("calculator"), ArgumentKeys: &[]string{"left"},
		ModelDurationMs: p(0.25), RawResponse: p("line\nbreak \"quoted\" é \xff")}
	line, err := appendEvent(nil, &ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEvent(line)
	if err != nil {
		t.Fatalf("ParseEvent(%s): %v", line, err)
	}
	if got.RunId != ev.RunId || !got.Time.Equal(ev.Time) || *got.RawResponse != "line\nbreak \"quoted\" é \uFFFD" || *got.ModelDurationMs != 0.25 {
		t.Fatalf("round trip = %+v", got)
	}
}

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
			if _, err := appendEvent(nil, &tt.ev); err == nil {
				t.Fatal("appendEvent accepts the event")
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

// The planner covers what encoding/json does for the kinds it accepts,
// including omitempty on values, and refuses everything else.
func TestPlannerKinds(t *testing.T) {
	type inner struct {
		A int8 `json:"a"`
	}
	type named string
	type kinds struct {
		S      string      `json:"s,omitempty"`
		B      bool        `json:"b,omitempty"`
		I      int         `json:"i,omitempty"`
		U      uint16      `json:"u"`
		F32    float32     `json:"f32"`
		F64    float64     `json:"f64,omitempty"`
		N      named       `json:"n"`
		Untag  string      //
		Skip   string      `json:"-"`
		Odd    string      `json:"a\"b"` // not a valid tag name: the field name is used
		Slice  []int       `json:"slice,omitempty"`
		Nested inner       `json:"nested,omitempty"`
		PtrPtr **inner     `json:"pp"`
		Times  []time.Time `json:"times"`
		Names  []named     `json:"names"`
		Empty  []string    `json:"empty,omitempty"`
		hidden int
	}
	enc, err := newEncoder(reflect.TypeFor[kinds]())
	if err != nil {
		t.Fatal(err)
	}
	in := &inner{A: -8}
	for _, v := range []kinds{
		{},
		{S: "x", B: true, I: -1, U: 65535, F32: 3.4e38, F64: 1e-7, N: "n", Untag: "u", Skip: "s", Odd: "o", Slice: []int{1, 2},
			Nested: inner{A: 1}, PtrPtr: &in, Times: []time.Time{{}, time.Unix(1, 5).UTC()}, Names: []named{"a", "\"b\""}, Empty: []string{"x"}, hidden: 1},
		{F32: 1e-7, Slice: []int{}, PtrPtr: new(*inner), Names: []named{}, Empty: []string{}},
	} {
		got, err := enc(nil, unsafe.Pointer(&v))
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSON(t, &v); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}

	type withMap struct {
		M map[string]int `json:"m"`
	}
	type withAny struct {
		A any `json:"a"`
	}
	type withBytes struct {
		B []byte `json:"b"`
	}
	type withRaw struct {
		R json.RawMessage `json:"r"`
	}
	type withString struct {
		N int `json:"n,string"`
	}
	type embedded struct {
		inner
	}
	type withText struct {
		T textValue `json:"t"`
	}
	type recursive struct {
		Next *recursive `json:"next"`
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[withMap](), reflect.TypeFor[withAny](), reflect.TypeFor[withBytes](), reflect.TypeFor[withRaw](),
		reflect.TypeFor[withString](), reflect.TypeFor[embedded](), reflect.TypeFor[withText](), reflect.TypeFor[recursive](),
		reflect.TypeFor[chan int](),
	} {
		if _, err := newEncoder(typ); err == nil {
			t.Errorf("the planner accepts %s", typ)
		}
	}
}

type textValue struct{}

func (textValue) MarshalText() ([]byte, error) { return []byte("text"), nil }

func FuzzAppendEvent(f *testing.F) {
	f.Add("r1", "calculator", "chars=2;sha256=00", 3, 0.125, int64(1700000000123456789), true, int64(7))
	f.Add("", "\x00\"\\\u2028\xff", "<&>", -1, 1e-9, int64(-62135596800000000), false, int64(-1))
	f.Fuzz(func(t *testing.T, runID, tool, output string, step int, ms float64, nanos int64, isError bool, tokens int64) {
		ev := gen.TraceEvent{RunId: runID, Step: step, EventType: gen.TraceEventType(tool), Time: time.Unix(0, nanos).UTC(),
			ToolName: &tool, Output: &output, ToolDurationMs: &ms, IsError: &isError, ArgumentKeys: &[]string{tool, output},
			Usage: &gen.Usage{InputTokens: tokens, OutputTokens: -tokens}}
		_, wantErr := json.Marshal(&ev)
		got, err := appendEvent(nil, &ev)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("appendEvent error %v, encoding/json error %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("invalid JSON %s", got)
		}
		if want := stdJSON(t, &ev); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// BenchmarkAppendEvent compares the planned encoder with encoding/json on
// a typical observation event.
//
//	go test ./trace -run '^$' -bench AppendEvent -benchmem
func BenchmarkAppendEvent(b *testing.B) {
	ev := gen.TraceEvent{RunId: "0123456789abcdef", Step: 12, EventType: gen.TraceEventTypeObservation, Time: time.Now().UTC(),
		ToolName: p("calculator"), Output: p(Summary("84")), IsError: p(false), ToolDurationMs: p(0.0123)}
	b.Run("planned", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = appendEvent(buf[:0], &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(&ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func checkTime(t *testing.T, tm time.Time) {
	t.Helper()
	want, wantErr := tm.MarshalJSON()
	got, err := appendTime([]byte("x"), unsafe.Pointer(&tm))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendTime(%v) error %v, MarshalJSON error %v", tm, err, wantErr)
	}
	if err == nil && string(got) != "x"+string(want) {
		t.Fatalf("appendTime(%v) = %s, want x%s", tm, got, want)
	}
}

func TestAppendTimeMatchesMarshalJSON(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("UTC", 0), time.FixedZone("x", 5*3600+30*60), time.Local}
	for _, tm := range []time.Time{
		{}, time.Unix(0, 0), time.Unix(0, 1), time.Unix(1, 999999999), time.Unix(1, 100000000), time.Unix(-1, 0),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 2, 3, 4, 5, 6, 7000, time.UTC), time.Now(),
	} {
		for _, z := range zones {
			checkTime(t, tm.In(z))
		}
		checkTime(t, tm) // with its monotonic reading, if any
	}
}

func FuzzAppendTime(f *testing.F) {
	f.Add(int64(1700000000), int64(123456789))
	f.Add(int64(-62167219200), int64(0))
	f.Add(int64(253402300799), int64(999999999))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec)
		checkTime(t, tm.UTC())
		checkTime(t, tm.In(time.FixedZone("x", -7*3600)))
	})
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
