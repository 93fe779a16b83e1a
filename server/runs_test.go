package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// TestCancel cancels a running and a queued run; both end cancelled, and
// cancelling a finished run is a 409.
func TestCancel(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models, MaxConcurrent: 1}})
	ctx := context.Background()
	running := ts.create(blockRequest("BLOCK running"))
	g.waitEntered(t, "BLOCK running")
	queued := ts.create(calcRequest())
	if r, _ := ts.sdk.GetRun(ctx, queued.Id); r.Status != gen.RunStatusQueued {
		t.Fatalf("second run is %s, want queued (one slot)", r.Status)
	}

	// The queued run first: cancelling the running one frees the slot.
	for _, id := range []string{queued.Id, running.Id} {
		if r := ts.answer(ts.raw.CancelRun(ctx, id)); r.status != http.StatusAccepted {
			t.Fatalf("cancel %s: %d %s", id, r.status, r.body)
		}
		run := ts.wait(id)
		if run.Result == nil || run.Result.ExitReason != gen.ExitReasonCancelled {
			t.Fatalf("run %s: %+v", id, run.Result)
		}
		if run.Result.Error == nil || !strings.Contains(*run.Result.Error, "cancelled by a client request") {
			t.Errorf("run %s error: %v", id, run.Result.Error)
		}
		// Every cancelled run's stream ends with run_finished.
		var last gen.TraceEvent
		for ev, err := range ts.sdk.Events(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			last = ev
		}
		if last.EventType != gen.TraceEventTypeRunFinished || *last.ExitReason != gen.ExitReasonCancelled {
			t.Errorf("last event of %s: %+v", id, last)
		}
	}
	if r, _ := ts.sdk.GetRun(ctx, queued.Id); r.StartedAt != nil {
		t.Errorf("the queued run has a start time: it never started")
	}

	_, err := ts.sdk.Cancel(ctx, running.Id)
	var apiErr *sdk.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || !errors.Is(err, sdk.ErrConflict) {
		t.Fatalf("cancel of a finished run: %v", err)
	}
}

// TestQueueFull: with one slot and a queue of one, the third run is a 429.
func TestQueueFull(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models, MaxConcurrent: 1, QueueSize: 1}})
	first := ts.create(blockRequest("BLOCK first"))
	g.waitEntered(t, "BLOCK first")
	second := ts.create(calcRequest())
	third := ts.answer(ts.raw.CreateRun(context.Background(), calcRequest()))
	decodeReply[gen.Problem](t, third, http.StatusTooManyRequests)
	if third.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	_, err := ts.sdk.CreateRun(context.Background(), calcRequest())
	if !errors.Is(err, sdk.ErrQueueFull) {
		t.Errorf("sdk: %v, want ErrQueueFull", err)
	}
	// A refused run leaves no trace behind.
	n := 0
	for _, err := range ts.sdk.ListRuns(context.Background(), sdk.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d runs listed, want 2", n)
	}
	g.release()
	for _, id := range []string{first.Id, second.Id} {
		if r := ts.wait(id); r.Result.ExitReason != gen.ExitReasonFinished {
			t.Errorf("run %s: %s", id, r.Result.ExitReason)
		}
	}
	// With the queue drained there is room again.
	ts.wait(ts.create(calcRequest()).Id)
}

// TestEventsResume resumes a stream after a position, with ?after and with
// Last-Event-ID, and follows a live run from its start to its end.
func TestEventsResume(t *testing.T) {
	t.Parallel()
	g := newGate()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models}})
	ctx := context.Background()
	run := ts.create(blockRequest("BLOCK live"))
	g.waitEntered(t, "BLOCK live")

	// A live stream: run_started is there, the rest comes when the model
	// is released.
	resp, err := ts.raw.GetRunEvents(ctx, run.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
	g.release()
	live := readSSE(t, resp.Body)
	resp.Body.Close()
	if len(live) != 5 || live[4].Event != "run_finished" {
		t.Fatalf("live stream: %d events", len(live))
	}

	for _, tt := range []struct {
		name   string
		params *gen.GetRunEventsParams
		header string
		first  int
	}{
		{"after", &gen.GetRunEventsParams{After: ptr(2)}, "", 3},
		{"Last-Event-ID", nil, "3", 4},
		{"after wins over Last-Event-ID", &gen.GetRunEventsParams{After: ptr(1)}, "4", 2},
		{"after the end", &gen.GetRunEventsParams{After: ptr(5)}, "", 6},
		{"from the start", &gen.GetRunEventsParams{After: ptr(0)}, "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := ts.raw.GetRunEvents(ctx, run.Id, tt.params, func(_ context.Context, req *http.Request) error {
				if tt.header != "" {
					req.Header.Set("Last-Event-ID", tt.header)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got := readSSE(t, resp.Body)
			want := live[tt.first-1:]
			if len(want) == 0 && len(got) == 0 {
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("sdk", func(t *testing.T) {
		var ids []int
		for ev, err := range ts.sdk.Events(ctx, run.Id, 3) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.Step)
			if ev.RunId != run.Id {
				t.Errorf("event of run %s", ev.RunId)
			}
		}
		if len(ids) != 2 {
			t.Errorf("%d events after 3, want 2", len(ids))
		}
	})
}

// TestListRuns pages through runs newest first and filters by status.
func TestListRuns(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models}})
	ctx := context.Background()
	var ids []string
	for range 7 {
		ids = append(ids, ts.wait(ts.create(calcRequest()).Id).Id)
	}
	blocked := ts.create(blockRequest("BLOCK list"))
	g.waitEntered(t, "BLOCK list")
	ids = append(ids, blocked.Id)

	var pages [][]string
	params := &gen.ListRunsParams{Limit: ptr(3)}
	for {
		list := decodeReply[gen.RunList](t, ts.answer(ts.raw.ListRuns(ctx, params)), http.StatusOK)
		var page []string
		for _, r := range list.Runs {
			page = append(page, r.Id)
		}
		pages = append(pages, page)
		if list.NextCursor == nil {
			break
		}
		params.Cursor = list.NextCursor
	}
	want := [][]string{{ids[7], ids[6], ids[5]}, {ids[4], ids[3], ids[2]}, {ids[1], ids[0]}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		status gen.RunStatus
		want   []string
	}{
		{gen.RunStatusRunning, []string{blocked.Id}},
		{gen.RunStatusQueued, nil},
		{gen.RunStatusFinished, []string{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}},
	} {
		var got []string
		for r, err := range ts.sdk.ListRuns(ctx, sdk.ListOptions{Status: tt.status, PageSize: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.status {
				t.Errorf("listed a %s run under %s", r.Status, tt.status)
			}
			got = append(got, r.Id)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("status %s (-want +got):\n%s", tt.status, diff)
		}
	}
}

// TestWorkspaceSerialized: runs naming the same workspace never run at the
// same time, while runs in other workspaces do.
func TestWorkspaceSerialized(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models, MaxConcurrent: 4}})
	for _, d := range []string{"a", "b", "a/sub"} {
		if err := os.MkdirAll(filepath.Join(ts.cfg.WorkspaceRoot, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	in := func(ws, prompt string) gen.CreateRunRequest {
		req := blockRequest(prompt)
		req.Workspace = &ws
		return req
	}
	a1 := ts.create(in("a", "BLOCK a1"))
	g.waitEntered(t, "BLOCK a1")
	a2 := ts.create(in("./a/", "BLOCK a2")) // the same directory, spelled differently
	b1 := ts.create(in("b", "BLOCK b1"))
	sub := ts.create(in("a/sub", "BLOCK sub"))
	// b1 and a/sub run alongside a1 (other directories); a2 waits for a1.
	g.waitEntered(t, "BLOCK b1")
	g.waitEntered(t, "BLOCK sub")
	for id, want := range map[string]gen.RunStatus{a1.Id: gen.RunStatusRunning, a2.Id: gen.RunStatusQueued, b1.Id: gen.RunStatusRunning, sub.Id: gen.RunStatusRunning} {
		if r, _ := ts.sdk.GetRun(ctx, id); r.Status != want {
			t.Errorf("run %s is %s, want %s", id, r.Status, want)
		}
	}
	if a2.Workspace == nil || *a2.Workspace != "a" {
		t.Errorf("workspace shown as %v, want the cleaned name a", a2.Workspace)
	}
	g.release()
	first, second := ts.wait(a1.Id), ts.wait(a2.Id)
	if !second.StartedAt.After(*first.FinishedAt) && !second.StartedAt.Equal(*first.FinishedAt) {
		t.Errorf("a2 started at %v, before a1 finished at %v", second.StartedAt, first.FinishedAt)
	}
}

// TestRunsWorkInTheirWorkspace: a run's file tools see its workspace.
func TestRunsWorkInTheirWorkspace(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	dir := filepath.Join(ts.cfg.WorkspaceRoot, "proj")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tools, err := ts.sdk.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !hasTool(tools, "write_file") {
		t.Fatal("the server offers no write_file tool")
	}
	ws := "proj"
	run := ts.wait(ts.create(gen.CreateRunRequest{
		Task:      gen.Task{Prompt: "write a note"},
		Workspace: &ws,
		Model: sdk.Script(
			`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"note.txt","content":"hello\n"}}`,
			`{"type":"finish","answer":"done"}`),
	}).Id)
	if run.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result: %+v", run.Result)
	}
	data, err := os.ReadFile(filepath.Join(dir, "note.txt"))
	if err != nil || string(data) != "hello\n" {
		t.Fatalf("note.txt: %q %v", data, err)
	}
	if run.Result.Patch == nil || !strings.Contains(*run.Result.Patch, "note.txt") {
		t.Errorf("patch: %v", run.Result.Patch)
	}
}

func hasTool(specs []gen.ToolSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// TestManyRuns runs more runs than slots through one workspace and several,
// concurrently, and checks that every one finished with its answer.
func TestManyRuns(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{Config: runner.Config{MaxConcurrent: 3}})
	for i := range 4 {
		if err := os.Mkdir(filepath.Join(ts.cfg.WorkspaceRoot, "w"+strconv.Itoa(i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			req := calcRequest()
			if i%2 == 0 {
				req.Workspace = ptr(fmt.Sprintf("w%d", i%4))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := ts.sdk.CreateRun(ctx, req)
			if err == nil {
				r, err = ts.sdk.Wait(ctx, r.Id)
			}
			if err == nil && (r.Result == nil || r.Result.Answer == nil || *r.Result.Answer != calcAnswer) {
				err = fmt.Errorf("run %s: %+v", r.Id, r.Result)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// Concurrent creates still list once each, newest first, across pages.
	seen := map[string]bool{}
	var last time.Time
	for r, err := range ts.sdk.ListRuns(context.Background(), sdk.ListOptions{PageSize: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[r.Id] {
			t.Errorf("run %s listed twice", r.Id)
		}
		seen[r.Id] = true
		if !last.IsZero() && r.CreatedAt.After(last) {
			t.Errorf("run %s is out of order", r.Id)
		}
		last = r.CreatedAt
	}
	if len(seen) != n {
		t.Errorf("%d runs listed, want %d", len(seen), n)
	}
}

// TestWorkspaceSymlinks: a symbolic link to a directory inside the root is
// the same workspace as its target (runs in both wait for each other); one
// that leads out of the root is refused.
func TestWorkspaceSymlinks(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models}})
	root := ts.cfg.WorkspaceRoot
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"alias": "real", "escape": outside} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	in := func(ws, prompt string) gen.CreateRunRequest {
		req := blockRequest(prompt)
		req.Workspace = &ws
		return req
	}
	first := ts.create(in("real", "BLOCK real"))
	g.waitEntered(t, "BLOCK real")
	second := ts.create(in("alias", "BLOCK alias"))
	if r, _ := ts.sdk.GetRun(context.Background(), second.Id); r.Status != gen.RunStatusQueued {
		t.Errorf("a run in a link to a busy workspace is %s, want queued", r.Status)
	}
	_, err := ts.sdk.CreateRun(context.Background(), in("escape", "p"))
	var apiErr *sdk.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || *apiErr.Problem.Field != "/workspace" {
		t.Errorf("a link out of the root: %v", err)
	}
	g.release()
	ts.wait(first.Id)
	ts.wait(second.Id)
}
