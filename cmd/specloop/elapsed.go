package main

import (
	"fmt"
	"io"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
)

// noticeInterval is how often a slow step's elapsed time is printed to a
// terminal.
const noticeInterval = 10 * time.Second

// clock is what elapsed-time output needs from time; tests pass fakes.
type clock struct {
	now func() time.Time
	// ticker returns a channel that ticks every d and a function that
	// stops it; nil prints no interval lines (output is not a terminal).
	ticker func(d time.Duration) (<-chan time.Time, func())
}

// realClock is the wall clock; interval lines only when w (or the writer
// termsafe.Guard wrapped) is a terminal, so that logs and pipes get no
// noise.
func realClock(w io.Writer) clock {
	c := clock{now: time.Now}
	if isTerminal(termsafe.Exact(w)) {
		c.ticker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return c
}

// every calls tick with the time since it was called every d until stop,
// which returns once no tick can run any more; without a ticker (the
// output is not a terminal) nothing ticks.
func (c clock) every(d time.Duration, tick func(elapsed time.Duration)) (stop func()) {
	if c.ticker == nil {
		return func() {}
	}
	start := c.now()
	ticks, stopTicker := c.ticker(d)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer stopTicker()
		for {
			select {
			case <-quit:
				return
			case <-ticks:
				tick(c.now().Sub(start))
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// slowStep says what a step that may take long is doing while it runs:
// a line when it starts, the elapsed time at intervals (on a terminal),
// and optionally a final line with the time it took.
type slowStep struct {
	w     io.Writer
	clock clock
	stop  func() // ends the step running; nil when none is
}

// begin prints what is happening and starts the interval lines; final,
// unless "", is printed with the elapsed time when the step ends.
func (s *slowStep) begin(what, final string) {
	s.end()
	start := s.clock.now()
	fmt.Fprintf(s.w, "         %s\n", what)
	ticking := s.clock.every(noticeInterval, func(elapsed time.Duration) {
		fmt.Fprintf(s.w, "         … %s\n", roundElapsed(elapsed))
	})
	s.stop = func() {
		ticking()
		if final != "" {
			fmt.Fprintf(s.w, "         %s %s\n", final, roundElapsed(s.clock.now().Sub(start)))
		}
	}
}

// end stops the interval lines (waiting until none can be printed) and
// prints the final line, if any.
func (s *slowStep) end() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

func roundElapsed(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// demoObserver prints the demo's steps and says what happens during the two
// steps that run `check` (the model's run_command and the completion check),
// whose first run compiles on a cold build cache and can take a minute.
// stop ends the interval lines of a step the run did not report the end of.
func demoObserver(w io.Writer, c clock, check string) (observe func(agent.Progress), stop func()) {
	p := &progressPrinter{w: w}
	slow := &slowStep{w: w, clock: c}
	compiled := false
	note := func() string {
		if compiled {
			return ""
		}
		compiled = true
		return " — the first run compiles, this can take a minute"
	}
	observe = func(pr agent.Progress) {
		slow.end()
		p.observe(pr)
		switch {
		case pr.ToolCall != nil && commandOf(pr.ToolCall) == check:
			slow.begin(fmt.Sprintf("running `%s`%s", check, note()), "")
		case pr.Finish != nil:
			slow.begin(fmt.Sprintf("running the check `%s`%s", check, note()), "the check ran for")
		}
	}
	return observe, slow.end
}

// commandOf is the command line of a tool call whose arguments are a
// command tool's input (gen.RunCommandInput), "" for any other call.
func commandOf(call *gen.ToolCall) string {
	command, _ := call.Arguments["command"].(string)
	return command
}
