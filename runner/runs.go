package runner

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/transcript"
)

// run is the compact record of one run. A finished run keeps only what
// GET /v1/runs/{id} shows; its events stay in its trace file. In-flight runs
// also have a job: what is needed to execute them and their live events.
type run struct {
	id        string
	created   time.Time
	workspace string // as given, cleaned; "" for the root
	taskLine  string // Run.task_line; "" for a run without a transcript
	// The run it continues and its conversation's first run ("" for a
	// run that continues none).
	continues, conversation string

	// Guarded by registry.mu: the run that continues this one, or
	// reserved while Continue creates it.
	next string

	// Guarded by registry.mu.
	status   gen.RunStatus
	started  time.Time
	finished time.Time
	result   *gen.RunResult
	job      *job // nil once finished
}

// job is an in-flight run's execution state.
type job struct {
	spec Spec          // the run, as accepted (its ID, workspace and approval timeout resolved)
	gate *approvalGate // nil when the policy asks no one

	telemetry telemetry.RunInfo // what the run's telemetry knows besides its events (telemetry.go)

	model  agent.Model
	ws     *heldWorkspace // the workspace, held open until the run ends
	ctx    context.Context
	cancel context.CancelCauseFunc
	events *liveEvents

	// A run an Engine was executing when this server started (reattach in
	// engine.go), and the events its trace held.
	attached bool
	seen     int
	// adopted: a run another runner accepted, which this one follows
	// (EngineIndex).
	adopted bool
	// A run in flight when this runner started, to go on from its
	// transcript's entries (resume.go).
	resume *transcript.Log
	// setup is the run of the spec's setup command (RunSetup), which the
	// loop's result lacks.
	setup *gen.CheckResult
}

// Causes of a cancellation, which become the run's error.
var (
	errCancelRequested = errors.New("cancelled by a client request")
	errShuttingDown    = errors.New("cancelled because the server is shutting down")
)

// view returns the run as the API shows it. Call with registry.mu held.
func (r *run) view() gen.Run {
	v := gen.Run{Id: r.id, Status: r.status, CreatedAt: r.created, ConversationId: r.conversationID(),
		Continues: orNil(r.continues), Workspace: orNil(r.workspace), TaskLine: orNil(r.taskLine),
		StartedAt: orNil(r.started), FinishedAt: orNil(r.finished)}
	if r.result != nil {
		res := *r.result
		v.Result = &res
	}
	return v
}

// orNil is a pointer to a copy of v, or nil for the zero value.
func orNil[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// conversationID is the id of the run's conversation: its first run's.
func (r *run) conversationID() string {
	if r.conversation != "" {
		return r.conversation
	}
	return r.id
}

// registry holds every run, sorted by creation (oldest first).
type registry struct {
	mu     sync.RWMutex
	byID   map[string]*run
	sorted []*run
	last   time.Time
}

func newRegistry() *registry { return &registry{byID: map[string]*run{}} }

// stamp returns a creation time later than every earlier one, so the list
// order is the order of acceptance. Call with mu held.
func (g *registry) stamp() time.Time {
	now := time.Now().UTC()
	if !now.After(g.last) {
		now = g.last.Add(time.Nanosecond)
	}
	g.last = now
	return now
}

// add inserts a run in creation order. Runs are stamped before they are
// recorded and added after, so concurrent creates may arrive out of order;
// they land near the end, where inserting is cheap.
func (g *registry) add(r *run) {
	g.byID[r.id] = r
	i, _ := slices.BinarySearchFunc(g.sorted, r, compareRuns)
	g.sorted = slices.Insert(g.sorted, i, r)
}

// compareRuns orders runs by creation time, then id.
func compareRuns(a, b *run) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

func (g *registry) get(id string) (gen.Run, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.byID[id]
	if !ok {
		return gen.Run{}, false
	}
	return r.view(), true
}

// list returns up to limit runs, newest first, older than the cursor,
// optionally only those with status; next is the cursor of the next page.
func (g *registry) list(status *gen.RunStatus, limit int, cursor string) (runs []gen.Run, next string, err error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	end := len(g.sorted)
	if cursor != "" {
		t, id, ok := parseCursor(cursor)
		if !ok {
			return nil, "", badField("cursor", `query parameter "cursor": is not a cursor this server issued`)
		}
		end, _ = slices.BinarySearchFunc(g.sorted, &run{created: t, id: id}, compareRuns)
	}
	listed := func(r *run) bool { return status == nil || r.status == *status }
	runs = make([]gen.Run, 0, min(limit, end))
	i := end - 1
	for ; i >= 0 && len(runs) < limit; i-- {
		if r := g.sorted[i]; listed(r) {
			runs = append(runs, r.view())
		}
	}
	// Offer a next page only when there is one.
	if len(runs) == limit && slices.ContainsFunc(g.sorted[:i+1], listed) {
		last := runs[len(runs)-1]
		next = makeCursor(last.CreatedAt, last.Id)
	}
	return runs, next, nil
}

// makeCursor encodes a position in the list: the creation time and id of
// the last run of a page. Clients treat it as opaque.
func makeCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixNano(), 10) + "." + id))
}

func parseCursor(c string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	ns, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || !ident.Plain(id) {
		return time.Time{}, "", false
	}
	return time.Unix(0, n).UTC(), id, true
}

// errQueueFull and errUnavailable are the scheduler's refusals.
var (
	errQueueFull   = &Error{Kind: Full, Detail: "the run queue is full; retry later"}
	errUnavailable = &Error{Kind: Unavailable, Detail: "the server is shutting down and accepts no new runs"}
)

// scheduler starts queued runs: at most slots at a time, at most one per
// workspace, in order of acceptance among the workspaces that are free. A
// queued run costs no goroutine.
type scheduler struct {
	mu       sync.Mutex
	free     int // free execution slots
	waiting  int // admitted runs not yet started
	capacity int // the most runs that may wait
	closing  bool
	// The queued runs in order of acceptance, and the workspaces a run
	// executes in. After each change, either no slot is free or every
	// queued run's workspace is busy.
	queue    []queued
	busy     map[string]bool
	creating sync.WaitGroup // admitted runs not yet queued
	workers  sync.WaitGroup
	start    func(*run) // runs a run; called in a new goroutine
}

// queued is a queued run and its workspace's key.
type queued struct {
	r   *run
	key string
}

func newScheduler(slots, capacity int, start func(*run)) *scheduler {
	return &scheduler{free: slots, capacity: capacity, busy: map[string]bool{}, start: start}
}

// admit reserves a place in the queue; the caller must follow with enqueue
// or release.
func (s *scheduler) admit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return errUnavailable
	}
	if s.waiting >= s.capacity {
		return errQueueFull
	}
	s.waiting++
	s.creating.Add(1)
	return nil
}

// hold keeps close from returning, as an admitted run not yet queued
// does, until unhold: for work that makes a run in flight without the
// queue (an adoption, index.go), which Shutdown must then find. It is
// refused once the scheduler closes.
func (s *scheduler) hold() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return errUnavailable
	}
	s.creating.Add(1)
	return nil
}

// unhold ends a hold.
func (s *scheduler) unhold() { s.creating.Done() }

// release gives back a reservation whose run was never created.
func (s *scheduler) release() {
	s.mu.Lock()
	s.waiting--
	s.mu.Unlock()
	s.creating.Done()
}

// enqueue queues an admitted run for the workspace key, or starts it when
// a slot and its workspace are free (no queued run can start then).
func (s *scheduler) enqueue(r *run, key string) {
	defer s.creating.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 && !s.busy[key] {
		s.run(queued{r, key})
	} else {
		s.queue = append(s.queue, queued{r, key})
	}
}

// run starts q in a new goroutine, which frees its slot and workspace at
// its end and starts the first queued runs that can start then. Call with
// mu held.
func (s *scheduler) run(q queued) {
	s.busy[q.key] = true
	s.waiting--
	s.free--
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		s.start(q.r)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.free++
		delete(s.busy, q.key)
		for i := 0; s.free > 0 && i < len(s.queue); i++ {
			if next := s.queue[i]; !s.busy[next.key] {
				s.queue = slices.Delete(s.queue, i, i+1)
				i--
				s.run(next)
			}
		}
	}()
}

// dequeue removes a queued run; it reports false when the run is not
// queued (it started already).
func (s *scheduler) dequeue(r *run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.queue, func(q queued) bool { return q.r == r })
	if i < 0 {
		return false
	}
	s.queue = slices.Delete(s.queue, i, i+1)
	s.waiting--
	return true
}

// close refuses new runs and returns the queued ones (removed from the
// queue) once every admitted run is queued.
func (s *scheduler) close() (runs []*run) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.creating.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queue {
		runs = append(runs, q.r)
	}
	s.waiting -= len(s.queue)
	s.queue = nil
	return runs
}

// wait blocks until every started run has ended or ctx is done.
func (s *scheduler) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
