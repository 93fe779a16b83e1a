package main

import (
	"bytes"
	"github.com/specloop/specloop/internal/termsafe"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// fakeClock moves only when the test says so; its ticker is a channel the
// test sends on.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	ticks chan time.Time
	out   *condBuffer
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func (f *fakeClock) clock(terminal bool) clock {
	c := clock{now: f.now}
	if terminal {
		c.ticker = func(time.Duration) (<-chan time.Time, func()) { return f.ticks, func() {} }
	}
	return c
}

// tick advances the clock, delivers one tick and waits until the line it
// causes was written.
func (f *fakeClock) tick(d time.Duration) {
	f.advance(d)
	n := f.out.writes()
	f.ticks <- f.now()
	f.out.waitFor(n + 1)
}

// condBuffer is a buffer whose writes can be waited for.
type condBuffer struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	n    int
}

func newCondBuffer() *condBuffer {
	b := &condBuffer{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *condBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	b.cond.Broadcast()
	return b.buf.Write(p)
}

func (b *condBuffer) writes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *condBuffer) waitFor(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.n < n {
		b.cond.Wait()
	}
}

func (b *condBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func demoEvents() (call, obs, finish, end agent.Progress) {
	name := "run_command"
	call = agent.Progress{ // as the loop reports it: the trace event names the tool too
		Event:    &gen.TraceEvent{EventType: gen.TraceEventTypeModelAction, Step: 4, ToolName: &name},
		ToolCall: &gen.ToolCall{ToolName: name, Arguments: map[string]any{"command": "go test ./...", "timeout_seconds": 120}},
	}
	ms := 12500.0
	obs = agent.Progress{
		Event:       &gen.TraceEvent{EventType: gen.TraceEventTypeObservation, Step: 4, ToolName: &call.ToolCall.ToolName, ToolDurationMs: &ms},
		Observation: &gen.Observation{Content: "exit code 0"},
	}
	finish = agent.Progress{Event: &gen.TraceEvent{EventType: gen.TraceEventTypeModelAction, Step: 5}, Finish: &gen.Finish{Answer: "fixed"}}
	end = agent.Progress{Event: &gen.TraceEvent{EventType: gen.TraceEventTypeRunFinished, Step: 5}}
	return
}

// While the demo's `go test` runs, a person is told what is happening and,
// on a terminal, how long it has been running; the check reports how long
// it took.
func TestDemoSaysWhatIsRunning(t *testing.T) {
	call, obs, finish, end := demoEvents()
	out := newCondBuffer()
	fc := &fakeClock{t: time.Unix(1000, 0), ticks: make(chan time.Time), out: out}
	observe, _ := demoObserver(out, fc.clock(true), "go test ./...")

	observe(call)
	fc.tick(10 * time.Second)
	fc.tick(10 * time.Second)
	fc.advance(500 * time.Millisecond)
	observe(obs)
	observe(finish)
	fc.tick(10 * time.Second)
	fc.advance(2 * time.Second)
	observe(end)

	want := "" +
		"step 4   → run_command {\"command\":\"go test ./...\",\"timeout_seconds\":120}\n" +
		"         running `go test ./...` — the first run compiles, this can take a minute\n" +
		"         … 10s\n" +
		"         … 20s\n" +
		"step 4   ← run_command: exit code 0 (12500.00 ms)\n" +
		"step 5   → finish fixed\n" +
		"         running the check `go test ./...`\n" +
		"         … 10s\n" +
		"         the check ran for 12s\n"
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// Output that is not a terminal (a pipe, a log) gets the notices and the
// check's time, but no interval lines.
func TestDemoNoticesWithoutTerminal(t *testing.T) {
	call, obs, finish, end := demoEvents()
	out := newCondBuffer()
	fc := &fakeClock{t: time.Unix(1000, 0), out: out}
	observe, _ := demoObserver(out, fc.clock(false), "go test ./...")
	observe(call)
	fc.advance(30 * time.Second)
	observe(obs)
	observe(finish)
	fc.advance(1500 * time.Millisecond)
	observe(end)
	got := out.String()
	for _, want := range []string{"running `go test ./...` — the first run compiles", "running the check `go test ./...`\n", "the check ran for 1.5s\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "…") {
		t.Errorf("interval lines without a terminal:\n%s", got)
	}
}

// When the check is the first `go test` of the run, it is the one that
// compiles, and the notice says so.
func TestDemoCheckFirstSaysItCompiles(t *testing.T) {
	_, _, finish, _ := demoEvents()
	out := newCondBuffer()
	fc := &fakeClock{t: time.Unix(1000, 0), out: out}
	observe, stop := demoObserver(out, fc.clock(false), "go test ./...")
	observe(finish)
	stop() // the run ended without reporting it
	if want := "running the check `go test ./...` — the first run compiles, this can take a minute\n         the check ran for 0s\n"; !strings.HasSuffix(out.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}

// While the model is asked, a terminal shows how long it has been waiting
// on one line rewritten in place, cleared when the model's text streams
// in; the streamed text is the step's model line, not printed twice.
// Output that is not a terminal gets the text only.
func TestLiveShowsTheWaitAndTheStreamedText(t *testing.T) {
	action := agent.Progress{
		Event:  &gen.TraceEvent{EventType: gen.TraceEventTypeModelAction, Step: 1},
		Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "done", Text: ptrTo("I will finish.")},
	}
	for _, terminal := range []bool{true, false} {
		out := newCondBuffer()
		fc := &fakeClock{t: time.Unix(1000, 0), ticks: make(chan time.Time), out: out}
		// On a terminal the printer writes through the sanitiser, which
		// must not turn the line's own control sequences into escapes.
		var w io.Writer = out
		if terminal {
			w = termsafe.NewWriter(out)
		}
		p := &progressPrinter{w: w, clock: fc.clock(terminal)}
		p.live(agent.Live{Step: 1})
		if terminal {
			fc.tick(time.Second)
			fc.tick(11 * time.Second)
		}
		p.live(agent.Live{Step: 1, Text: "I will "})
		p.live(agent.Live{Step: 1, Text: "finish."})
		p.observe(action)
		want := "step 1     model: I will finish.\nstep 1   → finish done\n"
		if terminal {
			want = "\r\033[K         waiting for the model (1 s)" +
				"\r\033[K         waiting for the model (12 s)" +
				"\r\033[K" + want
		}
		if got := out.String(); got != want {
			t.Errorf("terminal %v: got %q, want %q", terminal, got, want)
		}
	}
}

// BenchmarkLiveDelta is what a streamed piece of the model's text costs
// from the loop's Live to the terminal's writer (issue budget: within
// 50 ms of arriving): go test ./cmd/specloop -run '^$' -bench LiveDelta
func BenchmarkLiveDelta(b *testing.B) {
	p := &progressPrinter{w: io.Discard}
	for b.Loop() {
		p.live(agent.Live{Step: 1, Text: "the comparison is inverted "})
	}
}
