package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/trace"
)

// childEnv makes the test binary a server process (see TestMain) that
// serves DATA and ROOT with one slot and blocks the models of "BLOCK"
// prompts forever, so that it can be killed mid-run.
const childEnv = "SPECLOOP_SERVER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

func runChild() int {
	g := newGate()
	srv, err := server.New(server.Config{Token: testToken, Config: runner.Config{DataDir: os.Getenv("DATA"), WorkspaceRoot: os.Getenv("ROOT"), MaxConcurrent: 1, Models: g.models, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR http://%s\n", l.Addr())
	_ = http.Serve(l, srv.Handler())
	return 0
}

// startChild starts a server process (runChild) on data and root, killed
// when the test ends, and returns it with a client.
func startChild(t *testing.T, data, root string) (*exec.Cmd, *sdk.Client) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "DATA="+data, "ROOT="+root)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
	c, err := sdk.New(url, sdk.Config{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	return cmd, c
}

// TestKill9Recovery kills a server process with SIGKILL while one run is
// in flight and one is queued, then starts a new server on its data
// directory: every acknowledged run is there, the finished one with its
// result, and the other two go on (the one in flight from its transcript,
// the queued one from its start) and finish as the first did.
func TestKill9Recovery(t *testing.T) {
	t.Parallel()
	data, root := t.TempDir(), t.TempDir()
	cmd, c := startChild(t, data, root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done, err := c.CreateRun(ctx, calcRequest())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, done.Id); err != nil {
		t.Fatal(err)
	}
	inflight, err := c.CreateRun(ctx, blockRequest("BLOCK in flight"))
	if err != nil {
		t.Fatal(err)
	}
	// run_started is in the trace once the first event arrives.
	for _, err := range c.Events(ctx, inflight.Id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	queued, err := c.CreateRun(ctx, calcRequest())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: data, WorkspaceRoot: root}})
	var got []gen.Run
	for r, err := range ts.sdk.ListRuns(context.Background(), sdk.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 3 || got[0].Id != queued.Id || got[1].Id != inflight.Id || got[2].Id != done.Id {
		t.Fatalf("runs after the restart: %+v", got)
	}
	if res := got[2].Result; res == nil || res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != calcAnswer {
		t.Errorf("the finished run lost its result: %+v", res)
	}
	for _, r := range got[:2] {
		r = ts.wait(r.Id)
		if res := r.Result; res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != calcAnswer || res.StepsUsed != got[2].Result.StepsUsed {
			t.Errorf("run %s after the restart: %+v, want it to finish as the uninterrupted one", r.Id, res)
		}
	}
	// The in-flight run's stream is one run's: started once, finished once.
	var types []gen.TraceEventType
	for ev, err := range ts.sdk.Events(context.Background(), inflight.Id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.EventType)
	}
	if fmt.Sprint(types) != "[run_started model_action observation model_action run_finished]" {
		t.Errorf("events of the resumed run: %v", types)
	}
	// New runs work on the recovered server.
	if r := ts.wait(ts.create(calcRequest()).Id); r.Result.ExitReason != gen.ExitReasonFinished {
		t.Errorf("a run after recovery: %+v", r.Result)
	}
}

// TestRecoverTornFiles rebuilds runs from a data directory a crash left
// behind: a torn run log line, a torn trace line, a result only in the
// trace, a run without a trace. Recovery is idempotent.
func TestRecoverTornFiles(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.Mkdir(filepath.Join(data, "traces"), 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := "2026-01-02T03:04:05Z"
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(data, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	created := func(id, at string) string {
		return `{"op":"created","id":"` + id + `","time":"` + at + `","task":"chars=1;sha256=00","provider":"script","max_steps":5}` + "\n"
	}
	ev := func(id string, step int, typ string, extra string) string {
		return `{"run_id":"` + id + `","step":` + fmt.Sprint(step) + `,"event_type":"` + typ + `","time":"` + t0 + `"` + extra + `}` + "\n"
	}
	write("runs.jsonl",
		created("aaaa", "2026-01-02T03:04:01Z")+
			`{"op":"finished","id":"aaaa","time":"2026-01-02T03:04:02Z","started_at":"2026-01-02T03:04:01.5Z","result":{"run_id":"aaaa","exit_reason":"finished","answer":"42","steps_used":1}}`+"\n"+
			created("bbbb", "2026-01-02T03:04:03Z")+
			created("cccc", "2026-01-02T03:04:04Z")+
			created("dddd", "2026-01-02T03:04:05Z")+
			"this line is damaged\n"+
			`{"op":"created","id":"eeee","ti`) // torn: never acknowledged
	// bbbb was mid-write when the server died.
	write("traces/bbbb.jsonl", ev("bbbb", 0, "run_started", "")+ev("bbbb", 1, "model_action", `,"action_type":"tool_call","tool_name":"calculator"`)+`{"run_id":"bbbb","step":1,"event_ty`)
	// cccc finished, but its result line never reached the run log.
	write("traces/cccc.jsonl", ev("cccc", 0, "run_started", "")+ev("cccc", 2, "run_finished", `,"exit_reason":"max_steps_exceeded","steps_used":2,"error":"the step budget of 2 ran out"`))
	// dddd was queued: no trace.

	for restart := range 2 {
		ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: data}})
		ctx := context.Background()
		want := map[string]struct {
			reason gen.ExitReason
			steps  int
			answer string
		}{
			"aaaa": {gen.ExitReasonFinished, 1, "42"},
			"bbbb": {gen.ExitReasonInterrupted, 1, ""},
			"cccc": {gen.ExitReasonMaxStepsExceeded, 2, ""},
			"dddd": {gen.ExitReasonInterrupted, 0, ""},
		}
		var ids []string
		for r, err := range ts.sdk.ListRuns(ctx, sdk.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.Id)
			w, ok := want[r.Id]
			if !ok {
				t.Errorf("restart %d: unexpected run %s", restart, r.Id)
				continue
			}
			if r.Result == nil || r.Result.ExitReason != w.reason || r.Result.StepsUsed != w.steps || (w.answer != "") != (r.Result.Answer != nil) {
				t.Errorf("restart %d: run %s: %+v, want %+v", restart, r.Id, r.Result, w)
			}
		}
		if strings.Join(ids, ",") != "dddd,cccc,bbbb,aaaa" {
			t.Errorf("restart %d: runs %v", restart, ids)
		}
		// The torn trace line is gone and the trace ends with run_finished.
		f, err := os.Open(filepath.Join(data, "traces", "bbbb.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		log, err := trace.Read(f)
		f.Close()
		if err != nil || log.Torn != nil || len(log.Events) != 3 || log.Events[2].EventType != gen.TraceEventTypeRunFinished {
			t.Fatalf("restart %d: trace of bbbb: %v %+v", restart, err, log)
		}
		ts.close()
	}
	logData, err := os.ReadFile(filepath.Join(data, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logData), `"eeee"`) || !strings.HasSuffix(string(logData), "\n") {
		t.Errorf("the torn run log line was not cut off")
	}
	if n := strings.Count(string(logData), `"op":"finished"`); n != 4 {
		t.Errorf("%d finished lines, want 4 (recovery must not repeat itself)", n)
	}
}

// TestGracefulShutdown: Shutdown refuses new runs, cancels the running and
// the queued one, records them, and a new server finds them cancelled.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	data := t.TempDir()
	ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: data, Models: g.models, MaxConcurrent: 1}})
	running := ts.create(blockRequest("BLOCK shutdown"))
	g.waitEntered(t, "BLOCK shutdown")
	queued := ts.create(calcRequest())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := ts.sdk.CreateRun(ctx, calcRequest())
	if !errors.Is(err, sdk.ErrUnavailable) {
		t.Errorf("create after shutdown: %v, want ErrUnavailable", err)
	}
	for _, id := range []string{running.Id, queued.Id} {
		r, err := ts.sdk.GetRun(ctx, id)
		if err != nil || r.Result == nil || r.Result.ExitReason != gen.ExitReasonCancelled {
			t.Errorf("run %s after shutdown: %v %+v", id, err, r.Result)
		}
	}
	ts.close()

	ts2 := newTestServer(t, server.Config{Config: runner.Config{DataDir: data, WorkspaceRoot: ts.cfg.WorkspaceRoot}})
	for _, id := range []string{running.Id, queued.Id} {
		r, err := ts2.sdk.GetRun(ctx, id)
		if err != nil || r.Result == nil || r.Result.ExitReason != gen.ExitReasonCancelled || !strings.Contains(*r.Result.Error, "shutting down") {
			t.Errorf("run %s after a restart: %v %+v", id, err, r.Result)
		}
	}
}
