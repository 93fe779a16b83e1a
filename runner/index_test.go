package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// indexEngine is an engine with an index (runner.EngineIndex) that
// another runner filled: its runs are put there by the test, and a
// runner only ever looks them up, lists and follows them.
type indexEngine struct {
	mu   sync.Mutex
	runs map[string]*indexRun
	// lookup, when set, is called first by Lookup.
	lookup func(id string)
	// following counts the Follow calls under way.
	following atomic.Int32
}

type indexRun struct {
	run    gen.Run
	lines  [][]byte
	result *gen.RunResult
}

func newIndexEngine() *indexEngine { return &indexEngine{runs: map[string]*indexRun{}} }

// put indexes run v with the events evs; a finished run ends with
// run_finished and has its result.
func (e *indexEngine) put(t *testing.T, v gen.Run, evs ...gen.TraceEvent) {
	t.Helper()
	ir := &indexRun{run: v}
	for i, ev := range evs {
		ev.RunId, ev.Time = v.Id, v.CreatedAt.Add(time.Duration(i)*time.Second)
		line, err := json.Marshal(&ev)
		if err != nil {
			t.Fatal(err)
		}
		ir.lines = append(ir.lines, line)
	}
	if v.Status == gen.RunStatusFinished {
		ir.result = v.Result
	}
	e.mu.Lock()
	e.runs[v.Id] = ir
	e.mu.Unlock()
}

// Execute holds the runner's slot until the run must stop: the runs
// accepted after it stay queued.
func (e *indexEngine) Execute(ctx context.Context, sp runner.Spec, _ func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	<-ctx.Done()
	msg := "stopped"
	return gen.RunResult{RunId: &sp.ID, ExitReason: gen.ExitReasonCancelled, Error: &msg}, nil
}

// Follow hands over the events after the first seen and returns a
// finished run's result; it follows a run in flight until ctx is done.
func (e *indexEngine) Follow(ctx context.Context, id string, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	e.following.Add(1)
	defer e.following.Add(-1)
	e.mu.Lock()
	ir := e.runs[id]
	e.mu.Unlock()
	if ir == nil {
		return gen.RunResult{}, fmt.Errorf("follow %s: %w", id, runner.ErrNoEngineRun)
	}
	for _, line := range ir.lines[min(seen, len(ir.lines)):] {
		var ev gen.TraceEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return gen.RunResult{}, err
		}
		event(&ev, line)
	}
	if ir.result != nil {
		return *ir.result, nil
	}
	<-ctx.Done()
	msg := "stopped following"
	return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInterrupted, Error: &msg}, nil
}

func (e *indexEngine) Lookup(_ context.Context, id string) (runner.EngineRun, error) {
	if e.lookup != nil {
		e.lookup(id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ir := e.runs[id]
	if ir == nil {
		return runner.EngineRun{}, fmt.Errorf("lookup %s: %w", id, runner.ErrNoEngineRun)
	}
	return runner.EngineRun{Run: ir.run, Trace: append([][]byte(nil), ir.lines...)}, nil
}

func (e *indexEngine) List(context.Context, *gen.RunStatus, int, string) ([]gen.Run, string, error) {
	return nil, "", nil
}

// finishedRun is run id as the index has it once it finished.
func finishedRun(id string) (gen.Run, []gen.TraceEvent) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reason, steps, answer := gen.ExitReasonFinished, 1, "done"
	v := gen.Run{Id: id, ConversationId: id, CreatedAt: created, Status: gen.RunStatusFinished,
		Result: &gen.RunResult{RunId: &id, ExitReason: reason, StepsUsed: steps, Answer: &answer}}
	return v, []gen.TraceEvent{{EventType: gen.TraceEventTypeRunStarted},
		{Step: 1, EventType: gen.TraceEventTypeRunFinished, ExitReason: &reason, StepsUsed: &steps}}
}

func newIndexRunner(t *testing.T, e runner.Engine, data, root string) *runner.Runner {
	t.Helper()
	rn, err := runner.New(runner.Config{DataDir: data, WorkspaceRoot: root, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Shutdown(context.Background()) })
	return rn
}

// The workspace an index holds for a run is not trusted as a path: one in
// the isolated runs' directory, or leading out of it, is refused, and the
// run's end removes nothing under the workspace root.
func TestAnAdoptedRunsWorkspaceIsNotTrusted(t *testing.T) {
	t.Parallel()
	for _, ws := range []string{runner.IsolatedDir + "/../keep", runner.IsolatedDir + "/x", "../keep", "/keep"} {
		t.Run(ws, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for _, d := range []string{"keep", runner.IsolatedDir + "/x"} {
				if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			e := newIndexEngine()
			v, evs := finishedRun("r-forged")
			v.Workspace = &ws
			e.put(t, v, evs...)
			rn := newIndexRunner(t, e, t.TempDir(), root)
			_, err := rn.Get(v.Id)
			for _, d := range []string{"keep", runner.IsolatedDir + "/x"} {
				if _, err := os.Stat(filepath.Join(root, d)); err != nil {
					t.Errorf("%s: %v", d, err)
				}
			}
			var re *runner.Error
			if !errors.As(err, &re) || re.Kind != runner.Internal {
				t.Fatalf("Get: %v, want an internal error", err)
			}
		})
	}
}

// A workspace a request could have named is the adopted run's.
func TestAnAdoptedRunKeepsItsWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := newIndexEngine()
	v, evs := finishedRun("r-inworkspace")
	v.Workspace = ptrTo("a/b")
	e.put(t, v, evs...)
	rn := newIndexRunner(t, e, t.TempDir(), root)
	got, err := rn.Get(v.Id)
	if err != nil || got.Workspace == nil || *got.Workspace != "a/b" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
}

// A run that finished before this runner heard of it is adopted with its
// whole trace: the copy ends with the one run_finished the engine traced,
// not a second one of the runner's own.
func TestAnAdoptedFinishedRunKeepsOneRunFinished(t *testing.T) {
	t.Parallel()
	e := newIndexEngine()
	v, evs := finishedRun("r-finished")
	e.put(t, v, evs...)
	data := t.TempDir()
	rn := newIndexRunner(t, e, data, t.TempDir())
	got, err := rn.Get(v.Id)
	if err != nil || got.Status != gen.RunStatusFinished || got.Result == nil || got.Result.Answer == nil || *got.Result.Answer != "done" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	trace, err := os.ReadFile(filepath.Join(data, "traces", v.Id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(trace, []byte(`"event_type":"run_finished"`)); n != 1 {
		t.Fatalf("the adopted run's trace has %d run_finished events, want 1:\n%s", n, trace)
	}
}

// A trace line of the index that holds a line break (JSON allows one
// between its tokens) would be two lines of the copy: the adoption fails
// instead.
func TestAnAdoptedTraceLineWithALineBreakIsRefused(t *testing.T) {
	t.Parallel()
	e := newIndexEngine()
	v, evs := finishedRun("r-twolines")
	e.put(t, v, evs...)
	ir := e.runs[v.Id]
	ir.lines[0] = append([]byte("{\n"), ir.lines[0][1:]...)
	rn := newIndexRunner(t, e, t.TempDir(), t.TempDir())
	_, err := rn.Get(v.Id)
	var re *runner.Error
	if !errors.As(err, &re) || re.Kind != runner.Internal {
		t.Fatalf("Get: %v, want an internal error", err)
	}
}

// A run whose earlier run the index no longer has (its retention ended) is
// adopted and served all the same: the first request for it already finds
// it.
func TestAnAdoptedRunWhoseEarlierRunIsGone(t *testing.T) {
	t.Parallel()
	e := newIndexEngine()
	v, evs := finishedRun("r-followup")
	v.Continues, v.ConversationId = ptrTo("r-gone"), "r-gone"
	e.put(t, v, evs...)
	rn := newIndexRunner(t, e, t.TempDir(), t.TempDir())
	got, err := rn.Get(v.Id)
	if err != nil || got.Id != v.Id || got.Continues == nil || *got.Continues != "r-gone" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
}

// A run being adopted when the runner shuts down is part of the
// shutdown: the adoption is recorded (not refused by a run log closed
// under it), and Shutdown returns once it no longer follows the run.
func TestShutdownWhileARunIsAdopted(t *testing.T) {
	t.Parallel()
	e := newIndexEngine()
	id := "r-adoptedatshutdown"
	e.put(t, gen.Run{Id: id, ConversationId: id, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Status: gen.RunStatusRunning},
		gen.TraceEvent{EventType: gen.TraceEventTypeRunStarted})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.lookup = func(string) {
		once.Do(func() { close(entered) })
		<-release
	}
	rn := newIndexRunner(t, e, t.TempDir(), t.TempDir())
	got := make(chan error, 1)
	go func() {
		_, err := rn.Get(id)
		got <- err
	}()
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- rn.Shutdown(context.Background()) }()
	// Shutdown has begun once a request is refused for it (before the
	// request's own problem, a check on a server without commands).
	probe := gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}, Check: ptrTo("true")}
	for {
		_, err := rn.Create(context.Background(), probe)
		var re *runner.Error
		if errors.As(err, &re) && re.Kind == runner.Unavailable {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-got; err != nil {
		var re *runner.Error
		if !errors.As(err, &re) || re.Kind != runner.Unavailable {
			t.Fatalf("Get while shutting down: %v, want the run or unavailable", err)
		}
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := e.following.Load(); n != 0 {
		t.Fatalf("%d runs still followed after Shutdown", n)
	}
}

// The list of a runner with an index shows its queued runs (which only
// it knows) first, every one of them, page after page.
func TestTheIndexListShowsEveryQueuedRun(t *testing.T) {
	t.Parallel()
	rn, err := runner.New(runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), Engine: newIndexEngine(), MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Shutdown(context.Background()) })
	var queued []string
	for i := range 4 {
		v, err := rn.Create(context.Background(), script(t, `{"answer":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 { // the run in the slot: running before the others come
			waitFor(t, rn, v.Id, func(v gen.Run) bool { return v.Status == gen.RunStatusRunning })
		} else {
			queued = append(queued, v.Id)
		}
	}
	var listed []string
	cursor := ""
	for range 10 {
		page, next, err := rn.List(nil, 1, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page {
			listed = append(listed, v.Id)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	slices.Reverse(queued) // newest first
	if !slices.Equal(listed, queued) {
		t.Fatalf("listed %v, want the queued runs %v", listed, queued)
	}
}

func ptrTo[T any](v T) *T { return &v }

// blockingIndex is an index whose Lookup answers only once its context
// ends, as a visibility store that does not answer would.
type blockingIndex struct {
	*indexEngine
	entered chan struct{}
	ended   chan error // the Lookup context's error
}

func (e *blockingIndex) Lookup(ctx context.Context, _ string) (runner.EngineRun, error) {
	close(e.entered)
	<-ctx.Done()
	e.ended <- ctx.Err()
	return runner.EngineRun{}, ctx.Err()
}

// Shutdown does not wait out a request to the engine's index that does
// not answer: it cancels it at once (rather than after the request's own
// ten seconds), and the request that asked for the run is told the
// server is shutting down.
func TestShutdownCancelsAnIndexRequest(t *testing.T) {
	t.Parallel()
	e := &blockingIndex{indexEngine: newIndexEngine(), entered: make(chan struct{}), ended: make(chan error, 1)}
	rn := newIndexRunner(t, e, t.TempDir(), t.TempDir())
	got := make(chan error, 1)
	go func() {
		_, err := rn.Get("r-nobodyanswers")
		got <- err
	}()
	<-e.entered
	if err := rn.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-e.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the index request ended with %v, want it cancelled by Shutdown (not its own deadline)", err)
	}
	var re *runner.Error
	if err := <-got; !errors.As(err, &re) || re.Kind != runner.Unavailable {
		t.Fatalf("Get during Shutdown: %v, want unavailable", err)
	}
}
