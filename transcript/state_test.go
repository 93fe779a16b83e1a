package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// sizedScript is a scripted model with a context window: it estimates a
// request by its history's bytes, reports usage and writes summaries, so
// that a run with it compacts.
type sizedScript struct {
	*model.Script
	window int
}

func (m *sizedScript) ContextWindow() int { return m.window }

func (m *sizedScript) RequestTokens(req *agent.Request) int {
	n := 50 + len(req.Task.Prompt)/4
	for _, it := range req.History.All() {
		switch {
		case it.Observation != nil:
			n += len(it.Observation.Content) / 4
		case it.Feedback != nil:
			n += len(it.Feedback.Message) / 4
		default:
			n += 20
		}
	}
	return n
}

func (m *sizedScript) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	u := &gen.Usage{InputTokens: int64(m.RequestTokens(req)), OutputTokens: 7}
	if req.Summarize {
		return agent.Turn{Summary: "read a.txt, denied one write, wrote b.txt", Usage: u}, nil
	}
	t, err := m.Script.Next(ctx, req)
	t.Usage = u
	var invalid *agent.InvalidOutputError
	if errors.As(err, &invalid) {
		invalid.Usage = u
	}
	return t, err
}

// stateRun is a run with every kind of step: a read capped for the
// model, invalid output, a failing call, a denied and an approved write,
// a turn of two calls, a finish the check rejects, compactions, and the
// finish that passes.
var stateRun = []string{
	`{"type":"tool_call","tool_name":"read_file","arguments":{"path":"a.txt"}}`,
	`this is not an action`,
	`{"type":"tool_call","tool_name":"read_file","arguments":{"path":"missing.txt"}}`,
	`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"b.txt","content":"one\n"}}`,
	`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"b.txt","content":"two\n"}}`,
	`{"actions":[{"type":"tool_call","tool_name":"read_file","arguments":{"path":"b.txt"}},{"type":"tool_call","tool_name":"write_file","arguments":{"path":"c.txt","content":"three\n"}}]}`,
	`{"type":"tool_call","tool_name":"read_file","arguments":{"path":"a.txt","start_line":10,"end_line":60}}`,
	`{"type":"finish","answer":"done"}`,
	`{"type":"tool_call","tool_name":"read_file","arguments":{"path":"c.txt"}}`,
	`{"type":"finish","answer":"done, checked"}`,
}

const testWindow = 500

type liveRun struct {
	opts  agent.Options
	task  gen.Task
	state *agent.State // at the end, or at the pause
	res   gen.RunResult
	log   *transcript.Log
}

// runLive runs stateRun in a fresh workspace, recording its transcript;
// pauseAfter > 0 pauses it there.
func runLive(t *testing.T, pauseAfter int) *liveRun {
	t.Helper()
	dir := t.TempDir()
	var a strings.Builder
	for i := range 100 {
		a.WriteString(strings.Repeat("line ", 8) + string(rune('a'+i%26)) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	task := gen.Task{Prompt: "Read a.txt and write b.txt and c.txt."}
	decisions := []agent.Approval{
		{Decision: gen.ApprovalDecisionDeny, Reason: "not yet"},
		{Decision: gen.ApprovalDecisionApproveForRun},
	}
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	lr := &liveRun{task: task}
	lr.opts = agent.Options{
		MaxSteps: 20, RunID: "r-state", Tools: rt, Check: &failsOnce{},
		ApprovalPolicy: gen.ApprovalPolicyWrites,
		Approver: agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
			d := decisions[0]
			decisions = decisions[1:]
			return d, nil
		}),
		MaxObservationBytes: 1024, MaxObservationLines: 20,
		Compaction: agent.Compaction{KeepTurns: 2},
		Clock:      func() time.Time { return t0 },
		PauseAfter: pauseAfter,
		Observer:   transcript.NewRecorder(w, task.Prompt).Observe,
		Ended:      func(st agent.State) { lr.state = &st },
	}
	m := &sizedScript{Script: model.NewScript(stateRun...), window: testWindow}
	lr.res, err = agent.Run(context.Background(), task, m, lr.opts)
	var paused *agent.PausedError
	switch {
	case errors.As(err, &paused):
		lr.state = &paused.State
	case err != nil:
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lr.log = readLog(t, path)
	return lr
}

// rebuild rebuilds the state of log with the live run's options (and a
// model of the same window, asked nothing).
func rebuild(t *testing.T, lr *liveRun, log *transcript.Log) *agent.State {
	t.Helper()
	opts := lr.opts
	opts.PauseAfter, opts.Observer, opts.Ended, opts.Approver = 0, nil, nil, nil
	st, err := transcript.State(context.Background(), log, lr.task, &sizedScript{window: testWindow}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sameState(t *testing.T, got, want *agent.State) {
	t.Helper()
	g, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.MarshalIndent(want, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("rebuilt state:\n%s\nthe live run's:\n%s", g, w)
	}
}

// The state rebuilt from a finished run's transcript is the live run's
// at its end: the same history (compacted alike, observations capped
// alike), steps, usage, approvals, check and context budget.
func TestStateOfAFinishedRunIsTheLiveRunsState(t *testing.T) {
	lr := runLive(t, 0)
	if lr.res.ExitReason != gen.ExitReasonFinished || lr.res.StepsUsed != len(stateRun) {
		t.Fatalf("the live run: %s after %d steps (%v)", lr.res.ExitReason, lr.res.StepsUsed, deref(lr.res.Error))
	}
	var kinds []string
	summaries := 0
	for _, e := range lr.log.Entries {
		kinds = append(kinds, string(e.EventType))
		if e.EventType != gen.TraceEventTypeHistoryCompacted {
			continue
		}
		if e.History == nil {
			t.Errorf("history_compacted without the history: entry %d", e.Seq)
		}
		if e.Summary != nil {
			summaries++
		}
	}
	if summaries == 0 {
		t.Errorf("no compaction with a summary: %v", kinds)
	}
	for _, want := range []string{"history_compacted", "approval_decided", "finish_rejected", "model_feedback"} {
		if !strings.Contains(strings.Join(kinds, " "), want) {
			t.Fatalf("the live run has no %s: %v", want, kinds)
		}
	}
	if o := lr.log.Entries[2]; o.Observation == nil || o.Output == nil || len(o.Observation.Content) > 1024 || !strings.Contains(*o.Output, "line line") {
		t.Fatalf("the first observation: as the model saw it and the whole output, got %+v", o)
	}
	if !lr.state.ContextKnown || len(lr.state.Approved) == 0 || lr.state.Check == nil || !lr.state.Check.Passed {
		t.Fatalf("the live state lacks what the test is about: %+v", lr.state)
	}
	sameState(t, rebuild(t, lr, lr.log), lr.state)
}

// A run whose process was killed is rebuilt to its last complete step:
// the state a run paused there has, whether the transcript ends between
// two steps or in the middle of one.
func TestStateOfAKilledRunIsItsLastCompleteStep(t *testing.T) {
	full := runLive(t, 0)
	for _, k := range []int{2, 5, 7, 8, 9} {
		paused := runLive(t, k)
		var upTo, torn []gen.TranscriptEntry
		for _, e := range full.log.Entries {
			if e.Step <= k && e.EventType != gen.TraceEventTypeRunFinished {
				upTo = append(upTo, e)
			}
			if e.Step <= k && e.EventType != gen.TraceEventTypeRunFinished || e.Step == k+1 && e.EventType == gen.TraceEventTypeModelAction {
				torn = append(torn, e) // step k+1 proposed, and nothing more
			}
		}
		sameState(t, rebuild(t, full, &transcript.Log{Entries: upTo}), paused.state)
		sameState(t, rebuild(t, full, &transcript.Log{Entries: torn}), paused.state)
	}
}

// Options that are not the recorded run's make the replay leave the
// record: the error says so, and where.
func TestStateWithOtherOptionsDiverges(t *testing.T) {
	lr := runLive(t, 0)
	opts := lr.opts
	opts.PauseAfter, opts.Observer, opts.Ended = 0, nil, nil
	opts.ApprovalPolicy = gen.ApprovalPolicyNever // the writes were asked about
	_, err := transcript.State(context.Background(), lr.log, lr.task, &sizedScript{window: testWindow}, opts)
	if !errors.Is(err, transcript.ErrDiverged) || !strings.Contains(err.Error(), "step 4") {
		t.Fatalf("a replay without the approvals: %v, want ErrDiverged at step 4", err)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
