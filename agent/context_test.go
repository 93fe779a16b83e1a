package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// fileTools is a tool runtime with a read_file that returns lines lines of
// a file, numbered as the real one numbers them.
func fileTools(lines int) fakeTools {
	return fakeTools{"read_file", func(call *gen.ToolCall) string {
		var b strings.Builder
		path, _ := call.Arguments["path"].(string)
		for i := 1; i <= lines; i++ {
			fmt.Fprintf(&b, "%d\t// %s: some Go code on line %d\n", i, path, i)
		}
		return b.String()
	}}
}

// estimateTokens is the fake models' estimate of a request: a fixed
// overhead (system prompt, tools), the task, and per item a little framing
// plus its text at four bytes a token.
func estimateTokens(task gen.Task, h agent.History) int {
	n := 300 + len(task.Prompt)/4
	for _, it := range h.All() {
		n += 20
		switch {
		case it.ToolCall != nil:
			args, _ := json.Marshal(it.ToolCall.Arguments)
			n += len(args) / 4
		case it.Observation != nil:
			n += len(it.Observation.Content) / 4
		case it.Feedback != nil:
			n += len(it.Feedback.Message) / 4
		case it.Finish != nil:
			n += len(it.Finish.Answer) / 4
		}
	}
	return n
}

// providerTokens is what the fake provider counts for a request: 10% more
// than the estimate, so that the loop must use the reported usage as
// ground truth to stay under the window.
func providerTokens(task gen.Task, h agent.History) int { return estimateTokens(task, h) * 11 / 10 }

// windowModel is a model with a context window, asked for tool calls, one
// file each, before it finishes. Its provider refuses a request over the
// window (or, with refuse, the next ones whatever their size) with an
// error that wraps agent.ErrContextLength, as the adapters report one.
type windowModel struct {
	window    int
	calls     int
	parallel  int         // the tool calls of each turn; 0 means 1
	told      int         // the window a sizedModel says it has: 0 the window, -1 unknown (0)
	names     bool        // the refusal names the window (an agent.ContextLengthError)
	learns    bool        // a sizedModel says the window once refused
	refuseAt  map[int]int // made calls -> requests to refuse then
	made      int
	sent      []int // the provider's count of each request it answered
	refused   int
	summaries int
	usage     gen.Usage // all usage reported
	summary   int64     // the tokens of the summaries
	views     []agent.History
	snapshots [][]agent.Item
}

func (m *windowModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	if req.Summarize {
		return m.summarize(req.Task, req.History)
	}
	task, h := req.Task, req.History
	n := providerTokens(task, h)
	if n > m.window || m.refuseAt[m.made] > 0 {
		m.refused++
		if m.refuseAt[m.made] > 0 {
			m.refuseAt[m.made]--
		}
		err := fmt.Errorf("provider: 400 prompt is too long: %d tokens > %d maximum", n, m.window)
		if m.names {
			return agent.Turn{}, &agent.ContextLengthError{Window: m.window, Err: err}
		}
		return agent.Turn{}, fmt.Errorf("%w: %w", err, agent.ErrContextLength)
	}
	m.sent = append(m.sent, n)
	m.views = append(m.views, h)
	m.snapshots = append(m.snapshots, h.Items())
	u := &gen.Usage{InputTokens: int64(n), OutputTokens: 30}
	m.usage.InputTokens += u.InputTokens
	m.usage.OutputTokens += u.OutputTokens
	if m.made == m.calls {
		return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "done"}}}, Usage: u}, nil
	}
	m.made++
	var actions []agent.Action
	for i := range max(m.parallel, 1) {
		call := &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", Arguments: map[string]any{"path": fmt.Sprintf("pkg/f%d_%d.go", m.made, i)}}
		actions = append(actions, agent.Action{ToolCall: call})
	}
	return agent.Turn{Actions: actions, Usage: u}, nil
}

func (m *windowModel) summarize(task gen.Task, h agent.History) (agent.Turn, error) {
	m.summaries++
	n := providerTokens(task, h)
	if n > m.window {
		return agent.Turn{}, fmt.Errorf("summarize: %d tokens: %w", n, agent.ErrContextLength)
	}
	u := &gen.Usage{InputTokens: int64(n), OutputTokens: 50}
	m.summary += u.InputTokens + u.OutputTokens
	m.usage.InputTokens += u.InputTokens
	m.usage.OutputTokens += u.OutputTokens
	return agent.Turn{Summary: fmt.Sprintf("Read %d items so far; nothing is broken.", h.Len()), Usage: u}, nil
}

// sizedModel is a windowModel that is a ContextSizer.
type sizedModel struct{ *windowModel }

func (m sizedModel) ContextWindow() int {
	if m.learns && m.refused > 0 {
		return m.window
	}
	switch m.told {
	case 0:
		return m.window
	case -1:
		return 0
	}
	return m.told
}

func (m sizedModel) RequestTokens(req *agent.Request) int {
	return estimateTokens(req.Task, req.History)
}

func compactions(log *eventLog) []gen.TraceEvent {
	var out []gen.TraceEvent
	for _, ev := range log.events {
		if ev.EventType == gen.TraceEventTypeHistoryCompacted {
			out = append(out, ev)
		}
	}
	return out
}

// A 200-step run against a 16k-token window finishes without a request
// over the window: the loop compacts the history (stubs first, then a
// summary) and the history views it handed out never change.
func TestCompactionKeepsRequestsInTheWindow(t *testing.T) {
	m := &windowModel{window: 16000, calls: 200}
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 201, Tools: fileTools(150), Trace: log})
	if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 201 {
		t.Fatalf("res=%+v (error %s) err=%v", res, ptrText(res.Error), err)
	}
	if m.refused > 0 {
		t.Fatalf("%d requests were over the window", m.refused)
	}
	evs := compactions(log)
	summarized := 0
	for _, ev := range evs {
		if *ev.TokensAfter >= *ev.TokensBefore || *ev.BytesAfter >= *ev.BytesBefore || *ev.TokensBefore <= 16000*8/10 {
			t.Fatalf("a compaction that did not shrink the history, or ran under the threshold: %+v", ev)
		}
		if *ev.Summarized {
			summarized++
			if ev.Usage == nil {
				t.Fatal("a summarizing compaction without the summary's usage")
			}
		}
	}
	if len(evs) == 0 || summarized == 0 || summarized != m.summaries {
		t.Fatalf("%d compactions, %d summarized, %d summaries; want both kinds", len(evs), summarized, m.summaries)
	}
	t.Logf("%d requests, the largest %d tokens; %d compactions, %d summarized", len(m.sent), slices.Max(m.sent), len(evs), summarized)
	if diff := cmp.Diff(&m.usage, res.Usage); diff != "" {
		t.Fatalf("the run's usage is not all model calls and summaries (-want +got):\n%s", diff)
	}
	for i, v := range m.views {
		if diff := cmp.Diff(m.snapshots[i], v.Items()); diff != "" {
			t.Fatalf("the history view of call %d changed:\n%s", i+1, diff)
		}
	}
	// The last request: the summary first, old reads elided to stubs that
	// say how to read the lines again, the last turns whole.
	last := m.views[len(m.views)-1]
	first := last.At(0)
	if first.Feedback == nil || first.Feedback.Kind != gen.FeedbackKindHistorySummary || !strings.Contains(first.Feedback.Message, "Read ") {
		t.Fatalf("the compacted history does not start with the summary: %+v", first)
	}
	stubs, whole := 0, 0
	for _, it := range last.All() {
		if o := it.Observation; o != nil {
			if strings.HasPrefix(o.Content, "[output elided to save context: 150 lines, ") && strings.Contains(o.Content, `with start_line 1 and end_line 150 to see it again]`) {
				stubs++
			} else if strings.Count(o.Content, "\n") == 150 {
				whole++
			}
		}
	}
	if stubs == 0 || whole < 1 {
		t.Fatalf("the last request holds %d stubs and %d whole reads", stubs, whole)
	}
}

// A provider's context-length error triggers one compaction and a retry
// of the step; a second one in a row ends the run context_window_exceeded,
// never silently.
func TestContextLengthErrorCompactsOnce(t *testing.T) {
	plain := func(m *windowModel) agent.Model { return struct{ *windowModel }{m} } // no ContextSizer, but it answers summary requests

	t.Run("one refusal: compact and retry", func(t *testing.T) {
		m := &windowModel{window: 1 << 30, calls: 10, refuseAt: map[int]int{6: 1}}
		log := &eventLog{}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, plain(m), agent.Options{MaxSteps: 11, Tools: fileTools(150), Trace: log})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 11 {
			t.Fatalf("res=%+v (error %s) err=%v; want finished in 11 steps (the retry is the same step)", res, ptrText(res.Error), err)
		}
		evs := compactions(log)
		if m.refused != 1 || len(evs) != 1 || !*evs[0].Summarized || *evs[0].ItemsElided != 2 || *evs[0].BytesAfter >= *evs[0].BytesBefore {
			t.Fatalf("refused %d, compactions %+v; want one refusal, one compaction that elided the 2 oldest reads and summarized", m.refused, evs)
		}
		if evs[0].Step != 7 {
			t.Fatalf("the compaction is traced at step %d, want 7", evs[0].Step)
		}
		if h := m.views[6]; h.Len() != 9 || h.At(0).Feedback == nil {
			t.Fatalf("the retried request holds %d items, want the summary and the 4 kept turns", h.Len())
		}
	})
	t.Run("a model without an estimate, refused now and then", func(t *testing.T) {
		m := &windowModel{window: 16000, calls: 200}
		log := &eventLog{}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, plain(m), agent.Options{MaxSteps: 201, Tools: fileTools(150), Trace: log})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 201 {
			t.Fatalf("res=%+v (error %s) err=%v", res, ptrText(res.Error), err)
		}
		if n := len(compactions(log)); m.refused == 0 || n != m.refused {
			t.Fatalf("%d refusals, %d compactions; want one compaction for each refusal", m.refused, n)
		}
	})
	t.Run("two refusals in a row end the run", func(t *testing.T) {
		m := &windowModel{window: 1 << 30, calls: 10, refuseAt: map[int]int{6: 2}}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, plain(m), agent.Options{MaxSteps: 11, Tools: fileTools(150)})
		if err != nil || res.ExitReason != gen.ExitReasonContextWindowExceeded || res.StepsUsed != 7 || m.refused != 2 {
			t.Fatalf("res=%+v err=%v refused=%d; want context_window_exceeded at step 7 after 2 refusals", res, err, m.refused)
		}
		if !strings.Contains(*res.Error, "prompt is too long") {
			t.Fatalf("the error does not say why: %s", *res.Error)
		}
	})
	t.Run("nothing to compact ends the run", func(t *testing.T) {
		m := &windowModel{window: 1 << 30, calls: 10, refuseAt: map[int]int{0: 1}}
		res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, plain(m), agent.Options{MaxSteps: 11, Tools: fileTools(150)})
		if res.ExitReason != gen.ExitReasonContextWindowExceeded || m.refused != 1 {
			t.Fatalf("res=%+v refused=%d; want context_window_exceeded after one refusal", res, m.refused)
		}
	})
	t.Run("compaction disabled", func(t *testing.T) {
		m := &windowModel{window: 1 << 30, calls: 10, refuseAt: map[int]int{6: 1}}
		res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, plain(m), agent.Options{MaxSteps: 11, Tools: fileTools(150), Compaction: agent.Compaction{Disabled: true}})
		if res.ExitReason != gen.ExitReasonContextWindowExceeded || m.summaries != 0 {
			t.Fatalf("res=%+v summaries=%d; want context_window_exceeded without compaction", res, m.summaries)
		}
	})
}

// A request that compaction cannot bring under the window is never sent.
func TestRequestOverTheWindowIsNeverSent(t *testing.T) {
	m := &windowModel{window: 4000, calls: 10, parallel: agent.MaxTurnActions}
	// Each read is capped to fit the window, but a turn of the most
	// reads a turn may hold is over it on its own.
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 11, Tools: fileTools(400), MaxObservationBytes: 1 << 20, MaxObservationLines: 1000})
	if err != nil || res.ExitReason != gen.ExitReasonContextWindowExceeded || res.StepsUsed != 1 || len(m.sent) != 1 {
		t.Fatalf("res=%+v err=%v, %d requests; want context_window_exceeded after the first", res, err, len(m.sent))
	}
	if !strings.Contains(*res.Error, "over the model's context window of 4000") {
		t.Fatalf("the error does not say why: %s", *res.Error)
	}
	if m.refused != 0 {
		t.Fatalf("%d requests over the window were sent", m.refused)
	}
	if !errors.Is(&agent.ExitError{Result: res}, agent.ErrContextWindowExceeded) {
		t.Fatal("the ExitError does not match ErrContextWindowExceeded")
	}
}

// The summary's usage counts in the token budget.
func TestSummaryCountsInTheTokenBudget(t *testing.T) {
	m := &windowModel{window: 16000, calls: 200}
	free := agent.Options{MaxSteps: 201, Tools: fileTools(150)}
	if _, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, free); err != nil || m.summaries == 0 {
		t.Fatalf("err=%v summaries=%d", err, m.summaries)
	}
	// A budget the model calls alone stay within, and the summaries pass.
	calls := m.usage.InputTokens + m.usage.OutputTokens - m.summary
	m2 := &windowModel{window: 16000, calls: 200}
	budget := free
	budget.TokenBudget = calls
	res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m2}, budget)
	if res.ExitReason != gen.ExitReasonTokenBudgetExceeded {
		t.Fatalf("got %s, want token_budget_exceeded", res.ExitReason)
	}
}

// `specloop trace show` prints a compaction's counts and sizes.
func TestCompactionIsShown(t *testing.T) {
	m := &windowModel{window: 16000, calls: 40}
	log := &eventLog{}
	if _, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 41, Tools: fileTools(150), Trace: log}); err != nil {
		t.Fatal(err)
	}
	evs := compactions(log)
	if len(evs) == 0 {
		t.Fatal("no compaction")
	}
	ev := evs[0]
	line := trace.Format(&ev)
	want := fmt.Sprintf("history_compacted  elided=%d  bytes=%d->%d  est_tokens=%d->%d", *ev.ItemsElided, *ev.BytesBefore, *ev.BytesAfter, *ev.TokensBefore, *ev.TokensAfter)
	if !strings.Contains(line, want) {
		t.Fatalf("trace show prints %q, want it to hold %q", line, want)
	}
}

// A model told a larger window than its provider's, or none, learns the
// provider's from its first refusal: the run compacts to fit it, retries,
// sends nothing over it again, says so in the compaction that follows and
// records it in the result.
func TestWindowLearnedFromTheRefusal(t *testing.T) {
	for _, told := range []int{-1, 128_000} {
		t.Run(fmt.Sprintf("told %d", told), func(t *testing.T) {
			m := &windowModel{window: 8000, calls: 60, told: told, names: true}
			log := &eventLog{}
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 61, Tools: fileTools(150), Trace: log})
			if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 61 {
				t.Fatalf("res=%+v (error %s) err=%v", res, ptrText(res.Error), err)
			}
			if m.refused != 1 || res.ContextWindow == nil || *res.ContextWindow != 8000 {
				t.Fatalf("%d refusals, the result's window %v; want one refusal and 8000", m.refused, res.ContextWindow)
			}
			evs := compactions(log)
			if len(evs) == 0 || evs[0].ContextWindow == nil || *evs[0].ContextWindow != 8000 || slices.ContainsFunc(evs[1:], func(ev gen.TraceEvent) bool { return ev.ContextWindow != nil }) {
				t.Fatalf("compactions %+v; want the first, after the refusal, to name the window learned", evs)
			}
			if m.summaries*10 > res.StepsUsed {
				t.Fatalf("%d summaries in %d steps", m.summaries, res.StepsUsed)
			}
		})
	}
	t.Run("paused and resumed", func(t *testing.T) {
		m := &windowModel{window: 8000, calls: 60, told: -1, names: true}
		res, pauses, err := runPausing(t, sizedModel{m}, agent.Options{MaxSteps: 61, Tools: fileTools(150), PauseAfter: 5})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || pauses < 10 || m.refused != 1 || res.ContextWindow == nil || *res.ContextWindow != 8000 {
			t.Fatalf("res=%+v err=%v after %d pauses, %d refusals; want finished, one refusal, the window learned kept", res, err, pauses, m.refused)
		}
	})
	t.Run("a model that learns it itself", func(t *testing.T) {
		m := &windowModel{window: 8000, calls: 60, told: 128_000, learns: true}
		res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 61, Tools: fileTools(150)})
		if res.ExitReason != gen.ExitReasonFinished || m.refused != 1 || res.ContextWindow == nil || *res.ContextWindow != 8000 {
			t.Fatalf("res=%+v, %d refusals; want finished after one, the window the model learned kept", res, m.refused)
		}
	})
	t.Run("a refusal naming no window", func(t *testing.T) {
		m := &windowModel{window: 8000, calls: 60, told: -1}
		res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 61, Tools: fileTools(150)})
		if res.ContextWindow != nil {
			t.Fatalf("the result names the window %d, which no refusal named", *res.ContextWindow)
		}
	})
}

// A run whose harness alone leaves too little of the window says so at
// once, before any request.
func TestHarnessThatDoesNotFitEndsAtStart(t *testing.T) {
	m := &windowModel{window: 400, calls: 10}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 11, Tools: fileTools(150)})
	if err != nil || res.ExitReason != gen.ExitReasonContextWindowExceeded || res.StepsUsed != 0 || len(m.sent)+m.refused != 0 {
		t.Fatalf("res=%+v err=%v, %d requests; want context_window_exceeded before the first", res, err, len(m.sent)+m.refused)
	}
	if !strings.Contains(*res.Error, "the harness (system prompt, 1 tools, task and project docs) is about 313 tokens") ||
		!strings.Contains(*res.Error, "context window of 400") {
		t.Fatalf("the error does not say why: %s", *res.Error)
	}
}

// One tool output takes at most a quarter of what the harness leaves of
// the window (below the compaction threshold), whatever the byte cap.
func TestOutputCapFitsTheWindow(t *testing.T) {
	for _, window := range []int{4000, 1 << 20} {
		m := &windowModel{window: window, calls: 1}
		var seen []int
		observe := func(p agent.Progress) {
			if p.Seen != nil {
				seen = append(seen, len(p.Seen.Content))
			}
		}
		if _, err := agent.Run(context.Background(), gen.Task{Prompt: task}, sizedModel{m}, agent.Options{MaxSteps: 2, Tools: fileTools(400), Observer: observe}); err != nil {
			t.Fatal(err)
		}
		// The fake estimates four bytes a token; the harness is 313 tokens.
		want := min(agent.DefaultMaxObservationBytes, (window*8/10-313)/4*4)
		if len(seen) != 1 || seen[0] > want || seen[0] < want/2 {
			t.Fatalf("window %d: outputs of %v bytes, want one of at most %d, and more than half of it", window, seen, want)
		}
	}
}
