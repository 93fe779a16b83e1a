package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/specloop/specloop/gen"
)

// ContextSizer is the one optional ability of a Model: its context window
// and an estimate of a request, for compaction. A ContextSizer must answer
// a request for a summary (Request.Summarize).
type ContextSizer interface {
	// ContextWindow returns the model's context window in tokens; 0
	// means unknown: the run then keeps to no window until a refusal
	// names one (ContextLengthError).
	ContextWindow() int
	// RequestTokens estimates the whole request Next would send for req
	// (system prompt, tools, task, history), in tokens.
	RequestTokens(req *Request) int
}

// ErrContextLength is wrapped by a Model's error when the provider refused a
// request as over its context window; the loop then compacts once and
// retries instead of ending the run.
var ErrContextLength = errors.New("the request is over the model's context window")

// ContextLengthError is a Model's error for a request the provider refused
// as over its context window; it matches ErrContextLength. When the
// provider named its window (OpenAI's "maximum context length is N
// tokens", Anthropic's "N tokens > M maximum"), the loop keeps to it for
// the rest of the run: it compacts the history to fit, retries the
// request, and records the window in the result.
type ContextLengthError struct {
	// Window is the context window in tokens the provider named; 0 when
	// it named none.
	Window int
	// Err is the provider's error.
	Err error
}

func (e *ContextLengthError) Error() string   { return ErrContextLength.Error() + ": " + e.Err.Error() }
func (e *ContextLengthError) Unwrap() []error { return []error{ErrContextLength, e.Err} }

// Compaction configures how the loop keeps a run's requests within the
// model's context window. It applies to a Model that is a ContextSizer
// (compaction before a request would pass the threshold) and to any Model
// whose error wraps ErrContextLength (one compaction, then a retry).
//
// Compacting first replaces the content of the observations older than
// the KeepTurns most recent turns by a stub saying what was elided and how
// to get it back (the path and line range of a read_file, re-running a
// command, repeating a search), and of fewer turns, down to the last one,
// when that leaves the request over half the threshold: the room the
// compaction frees holds the outputs of several steps, so that the next
// compaction is not at the next step. When the request is still over
// three quarters of the threshold with only the last turn whole, the older
// part of the history is replaced by one summary the model writes (a
// Request with Summarize set; the summary becomes a ModelFeedback of kind
// history_summary); its usage counts in the run's usage and token budget.
// When the request is still over the window, the observations of the kept
// turns but the last are elided too. A request that cannot be brought under
// the window is never sent: the run ends context_window_exceeded.
//
// The window also sizes the run's parts: the harness (system prompt, tool
// schemas, task and project docs, the request without history) must leave
// a quarter of the threshold free, or the run ends context_window_exceeded
// at once, and one tool output takes at most a quarter of what the
// harness leaves under the threshold (Options.MaxObservationBytes is
// lowered to fit).
type Compaction struct {
	// Threshold is the share of the context window a request may fill
	// before the history is compacted; 0 (or any value outside (0, 1])
	// means DefaultCompactionThreshold.
	Threshold float64
	// KeepTurns is how many of the most recent model turns keep their
	// observations whole (and stay out of a summary); 0 means
	// DefaultKeepTurns.
	KeepTurns int
	// Disabled turns compaction off: a request over the window (by the
	// model's estimate, or refused by the provider) ends the run.
	Disabled bool
}

// The compaction defaults. 80% leaves room for the reply and for the
// estimate's error (crush compacts at 80% too); four turns keep the
// working set of a step — the file just read, the command just run —
// while everything older is elided first.
const (
	DefaultCompactionThreshold = 0.8
	DefaultKeepTurns           = 4
)

// The shares of the threshold that size a compaction (see Compaction).
const (
	elideTo     = 0.5  // elide older turns until the request is under this
	summarizeAt = 0.75 // summarize when eliding all but the last turn leaves it over this
)

// ErrContextWindowExceeded and ErrStuck are the sentinels of the exit
// reasons context_window_exceeded and stuck (see ExitError).
var (
	ErrContextWindowExceeded = errors.New("context window exceeded")
	ErrStuck                 = errors.New("run stuck")
)

// contextBudget tracks the size of a run's requests for a ContextSizer.
type contextBudget struct {
	sizer     ContextSizer // nil when the model is none
	window    int          // 0 while unknown
	learned   bool         // window is the one a refusal named
	announce  bool         // the next history_compacted records the window learned
	threshold float64
	keep      int
	// base is the usage (input + output tokens) the provider reported for
	// the last request that reported one, and baseEst the sizer's
	// estimate of that request: ground truth plus the estimate of what
	// was added since is the estimate of the next request.
	base, baseEst int
	known         bool
	sent          int // the sizer's estimate of the request being sent
}

func newContextBudget(m Model, c Compaction) contextBudget {
	b := contextBudget{threshold: c.Threshold, keep: orDefault(c.KeepTurns, DefaultKeepTurns)}
	if s, ok := m.(ContextSizer); ok {
		b.sizer, b.window = s, max(s.ContextWindow(), 0)
	}
	if b.threshold <= 0 || b.threshold > 1 {
		b.threshold = DefaultCompactionThreshold
	}
	return b
}

// sized reports whether the run keeps its requests within a known window.
func (b *contextBudget) sized() bool { return b.sizer != nil && b.window > 0 }

// estimate returns the estimated tokens of req, and the sizer's own
// estimate of it.
func (b *contextBudget) estimate(req *Request) (total, raw int) {
	raw = b.sizer.RequestTokens(req)
	if !b.known {
		return raw, raw
	}
	return max(0, b.base+raw-b.baseEst), raw
}

// reported records the usage of the request last sent.
func (b *contextBudget) reported(u *gen.Usage) {
	if !b.sized() || u == nil {
		return
	}
	b.base, b.baseEst, b.known = int(u.InputTokens+u.OutputTokens), b.sent, true
}

// over reports whether tokens pass share of the compaction threshold: 1
// for the threshold itself, less for what a compaction aims for (one that
// leaves the request just under the threshold would be back at the next
// step, changing the request's prefix, and so defeating the provider's
// prompt cache, each time).
func (b *contextBudget) over(tokens int, share float64) bool {
	return float64(tokens) > share*b.threshold*float64(b.window)
}

// beforeCall makes sure the next request fits: it compacts the history
// when the request would pass the threshold, and ends the run when it
// would still not fit the window.
func (l *loop) beforeCall(ctx context.Context, step int) *end {
	b := &l.ctxb
	if !b.sized() {
		return nil
	}
	tokens, raw := b.estimate(l.request(l.history.view()))
	if b.over(tokens, 1) && !l.opts.Compaction.Disabled {
		var e *end
		if tokens, e = l.compact(ctx, step, tokens, false); e != nil {
			return e
		}
		_, raw = b.estimate(l.request(l.history.view()))
	}
	if tokens > b.window {
		return &end{reason: gen.ExitReasonContextWindowExceeded, steps: step - 1,
			err: fmt.Errorf("the next request would be about %d tokens, over the model's context window of %d, even after compacting the history", tokens, b.window)}
	}
	b.sent = raw
	return nil
}

// fit sizes the run to its window (see Compaction): it ends the run when
// the harness, the request without history, leaves less than a quarter of
// the threshold free, and caps each tool output at a quarter of what it
// leaves. steps is the steps used so far.
func (l *loop) fit(steps int) *end {
	l.obsBytes = orDefault(l.opts.MaxObservationBytes, DefaultMaxObservationBytes)
	b := &l.ctxb
	if !b.sized() {
		return nil
	}
	harness, limit := b.sizer.RequestTokens(l.request(History{})), b.threshold*float64(b.window)
	if float64(harness) > 0.75*limit {
		return &end{reason: gen.ExitReasonContextWindowExceeded, steps: steps,
			err: fmt.Errorf("the harness (system prompt, %d tools, task and project docs) is about %d tokens, more than three quarters of the %d a request may take in the model's context window of %d before compaction: give a larger window or fewer tools or project docs", len(l.tools), harness, int(limit), b.window)}
	}
	// Bytes per token: what an output of n bytes adds to a request.
	const n = 4096
	output := func(s string) *Request {
		return l.request(History{items: []Item{{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "x"}},
			{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "x", Content: s}}}})
	}
	if d := b.sizer.RequestTokens(output(strings.Repeat("x", n))) - b.sizer.RequestTokens(output("")); d > 0 {
		l.obsBytes = min(l.obsBytes, int((limit-float64(harness))/4*n/float64(d)))
	}
	return nil
}

// refusal answers the provider's refusal of the request as over the
// context window (err wraps ErrContextLength). When the refusal named a
// window smaller than the one the run keeps to (a ContextLengthError's,
// else the model's ContextWindow read again: a model may learn it
// itself), the run keeps to it from now on, fitted to it (fit), and counts
// the refused request over it, so that the retry's beforeCall compacts the
// history to fit. Otherwise (no smaller window, or no estimate to keep to
// it with) every step of a compaction is taken at once.
func (l *loop) refusal(ctx context.Context, step int, err error) *end {
	b := &l.ctxb
	w := 0
	if cl := (*ContextLengthError)(nil); errors.As(err, &cl) {
		w = cl.Window
	}
	if b.sizer != nil && w <= 0 {
		w = b.sizer.ContextWindow()
	}
	if b.sizer == nil || w <= 0 || (b.window > 0 && w >= b.window) {
		_, e := l.compact(ctx, step, 0, true)
		return e
	}
	b.window, b.learned, b.announce = w, true, true
	if e := l.fit(step - 1); e != nil {
		return e
	}
	if tokens, raw := b.estimate(l.request(l.history.view())); tokens <= b.window {
		b.base, b.baseEst, b.known = b.window+1, raw, true
	}
	return nil
}

// compact rebuilds the history smaller (see Compaction) and records a
// history_compacted event; it returns the estimated tokens of the next
// request (0 without a sizer). force, after the provider refused a
// request as too long, takes every step whatever the estimate says. The
// old log is left as it was, so that views handed out never change.
func (l *loop) compact(ctx context.Context, step, tokens int, force bool) (int, *end) {
	b := &l.ctxb
	items := l.history.items
	if force && b.sized() {
		tokens, _ = b.estimate(l.request(l.history.view()))
	}
	// What the compaction did, for its event.
	tokensBefore, bytesBefore := tokens, textBytes(items)
	elided, said := 0, "" // said: the summary the model wrote
	var usage *gen.Usage
	var out []Item
	measure := func() int {
		if !b.sized() {
			return 0
		}
		t, _ := b.estimate(l.request(History{items: out}))
		return t
	}
	starts := turnStarts(items)
	cut := 0 // the first item of the turns kept whole
	for keep := b.keep; ; keep-- {
		cut = 0
		if len(starts) > keep {
			cut = starts[len(starts)-keep]
		}
		out = slices.Clone(items)
		elided = elide(out[:cut], items, l.offered)
		tokens = measure()
		if force || !b.sized() || keep <= 1 || !b.over(tokens, elideTo) {
			break
		}
	}
	if (force || b.sized() && b.over(tokens, summarizeAt)) && cut > 0 {
		req := l.request(History{items: out[:cut:cut]})
		req.Summarize = true
		// A summary request that would not fit the window is not sent;
		// one the provider refuses as too long is done without.
		if !b.sized() || b.sizer.RequestTokens(req) <= b.window {
			turn, err := l.model.Next(ctx, req)
			summary := turn.Summary
			usage = turn.Usage
			if err == nil && summary == "" {
				err = errors.New("the model answered without a summary")
			}
			if e := l.addUsage(usage); e != nil {
				return 0, &end{reason: gen.ExitReasonTokenBudgetExceeded, err: e, steps: step - 1}
			}
			switch {
			case err != nil && ctx.Err() != nil:
				return 0, &end{reason: gen.ExitReasonCancelled, err: context.Cause(ctx), steps: step - 1}
			case errors.Is(err, ErrContextLength):
			case err != nil:
				return 0, &end{reason: gen.ExitReasonModelError, err: fmt.Errorf("summarize the history: %w", err), steps: step - 1}
			default:
				fb := &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindHistorySummary, Message: summaryPreface + summary}
				out = append([]Item{{Feedback: fb}}, out[cut:]...)
				said = summary
				tokens = measure()
				starts = turnStarts(out)
			}
		}
	}
	if b.sized() && tokens > b.window && len(starts) > 1 {
		// The kept turns are too large: keep only the last one whole.
		last := starts[len(starts)-1]
		elided += elide(out[:last], out, l.offered)
		tokens = measure()
	}
	if elided == 0 && said == "" && usage == nil {
		// Nothing to compact: no event, and the history stays.
		if force {
			return tokens, &end{reason: gen.ExitReasonContextWindowExceeded, steps: step - 1,
				err: errors.New("the provider refused the request as over the model's context window, and the history cannot be compacted further")}
		}
		return tokens, nil
	}
	l.history = historyLog{items: out}
	ev := l.event(step, gen.TraceEventTypeHistoryCompacted)
	ev.ItemsElided, ev.Summarized, ev.Usage = &elided, ptr(said != ""), usage
	ev.BytesBefore, ev.BytesAfter = &bytesBefore, ptr(textBytes(out))
	ev.TokensBefore, ev.TokensAfter = &tokensBefore, ptr(tokens)
	if b.announce {
		ev.ContextWindow, b.announce = ptr(b.window), false
	}
	if err := l.emitDetail(Progress{Event: ev, Summary: said, History: l.history.view()}); err != nil {
		return 0, &end{reason: gen.ExitReasonInternalError, err: err, steps: step - 1}
	}
	return tokens, nil
}

// summaryPreface starts the message of a history_summary.
const summaryPreface = "The earlier part of this run was compacted to save context; this is its summary. Outputs from then are no longer shown: call the tools again for what you need.\n\n"

// turnStarts returns the index of the first item of each model turn of
// items: a turn starts with its first action (a tool call or a finish) and
// holds what follows it (observations, feedback) up to the next turn.
// Items before the first action (a summary) belong to no turn.
func turnStarts(items []Item) []int {
	var starts []int
	prevAction := false
	for i, it := range items {
		action := it.ToolCall != nil || it.Finish != nil
		if action && !prevAction {
			starts = append(starts, i)
		}
		prevAction = action
	}
	return starts
}

// elide replaces, in dst, each observation longer than its stub by the
// stub, and returns how many it replaced. calls holds the tool calls the
// observations answer (dst's items or a copy with the same positions);
// offered are the tools by name, for their hints.
func elide(dst []Item, calls []Item, offered map[string]gen.ToolSpec) int {
	n := 0
	for i, it := range dst {
		obs := it.Observation
		if obs == nil {
			continue
		}
		call := callOf(calls, i)
		var h *gen.ToolHints
		if call != nil {
			h = offered[call.ToolName].Hints
		}
		stub := elisionStub(h, call, obs)
		if len(stub) >= len(obs.Content) {
			continue
		}
		c := *obs
		c.Content, c.Data = stub, nil
		dst[i] = Item{Observation: &c}
		n++
	}
	return n
}

// callOf returns the tool call that the observation at index i of items
// answers: the calls of a turn are answered in order, so it is the call
// as many places back among the turn's calls as the observation is among
// its observations.
func callOf(items []Item, i int) *gen.ToolCall {
	j := i
	for j > 0 && items[j-1].Observation != nil {
		j--
	}
	k := i - j // the observation's place among the turn's observations
	end := j
	for j > 0 && (items[j-1].ToolCall != nil || items[j-1].Finish != nil) {
		j--
	}
	if j+k < end && items[j+k].ToolCall != nil {
		return items[j+k].ToolCall
	}
	return nil
}

// textBytes is the bytes of text a history holds: what compaction
// shrinks.
func textBytes(items []Item) int {
	n := 0
	for _, it := range items {
		switch {
		case it.Observation != nil:
			n += len(it.Observation.Content)
		case it.Feedback != nil:
			n += len(it.Feedback.Message)
		case it.Finish != nil:
			n += len(it.Finish.Answer)
		case it.UserMessage != nil:
			n += len(it.UserMessage.Text)
		}
	}
	return n
}
