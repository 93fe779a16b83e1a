package itest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/encoding/protojson"
)

var (
	update  = flag.Bool("update", false, "record the workflow history that temporal/testdata/ replays")
	history = flag.String("history", "history-runindex.json", "with -update: the file of temporal/testdata/ the history goes to (a new one when the workflow changed behind a GetVersion, so that the older runs' histories still replay)")
)

// cluster is a Temporal server, API servers and two workers of one host.
// Its methods talk to the API server at url: on(i) is the same cluster
// seen through API server i.
type cluster struct {
	t       *testing.T
	bin     string
	address string
	ns      string
	queue   string
	dir     string // holds the store, the workspace root and the API servers' data
	url     string
	workers []*exec.Cmd
	apis    []*apiServer
}

// apiServer is a `specloop-temporal serve` process with its own --data.
type apiServer struct {
	cmd  *exec.Cmd
	args []string
	url  string
}

// newCluster starts a temporaltest server (SQLite in memory) with two
// workers and an API server.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	return newClusterOn(t, ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), "itest", 1)
}

// newClusterOn starts two workers and apis API servers, each with its
// own --data, on the Temporal server at address, on task queue queue.
func newClusterOn(t *testing.T, address, ns, queue string, apis int) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir(), address: address, ns: ns, queue: queue}
	c.bin = filepath.Join(c.dir, "specloop-temporal")
	build := exec.Command("go", "build", "-o", c.bin, "./cmd/specloop-temporal")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build specloop-temporal: %v\n%s", err, out)
	}
	for _, d := range []string{"ws", "store"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		c.workers = append(c.workers, c.start("worker", "--workspace-root", filepath.Join(c.dir, "ws"), "--allow-commands", "--sandbox", "none"))
	}
	for i := range apis {
		port := freePort(t)
		a := &apiServer{url: "http://127.0.0.1:" + port, args: []string{"serve", "--addr", "127.0.0.1:" + port,
			"--data", filepath.Join(c.dir, fmt.Sprintf("data-%d", i)), "--workspace-root", filepath.Join(c.dir, "ws"), "--allow-commands", "--sandbox", "none"}}
		c.apis = append(c.apis, a)
		c.startAPI(a)
	}
	c.url = c.apis[0].url
	return c
}

// on returns the cluster seen through API server i.
func (c *cluster) on(i int) *cluster {
	v := *c
	v.url = c.apis[i].url
	return &v
}

// startAPI starts API server a and waits until it serves.
func (c *cluster) startAPI(a *apiServer) {
	t := c.t
	t.Helper()
	a.cmd = c.start(a.args...)
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(a.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server did not come up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// start starts a specloop-temporal process with the cluster's Temporal
// flags; the test kills it at its end.
func (c *cluster) start(args ...string) *exec.Cmd {
	c.t.Helper()
	args = append(args, "--temporal-address", c.address, "--namespace", c.ns, "--task-queue", c.queue, "--store", filepath.Join(c.dir, "store"))
	if args[0] == "serve" { // the API server gives each run's workflow its heartbeat timeout
		args = append(args, "--heartbeat-timeout", "2s")
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func toolCall(id, command string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "run_command", "call_id": id, "arguments": map[string]any{"command": command}})
	return string(b)
}

// script appends to a file, runs a slow command (the worker running it is
// killed), appends again and finishes.
var script = []string{
	toolCall("c1", "echo one >> log.txt"),
	toolCall("c2", "sleep 4"),
	toolCall("c3", "echo two >> log.txt"),
	`{"type":"finish","answer":"done"}`,
}

type runView struct {
	ID     string         `json:"id"`
	Status string         `json:"status"`
	Result map[string]any `json:"result"`
}

// createRun starts a run of the script in workspace ws.
func (c *cluster) createRun(ws string) string {
	c.t.Helper()
	return c.createScriptRun(ws, script)
}

func (c *cluster) waitRun(id string) runView {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(c.url + "/v1/runs/" + id)
		if err != nil {
			c.t.Fatal(err)
		}
		var v runView
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			c.t.Fatal(err)
		}
		if v.Status == "finished" {
			return v
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("run %s did not finish", id)
	return runView{}
}

type sse struct {
	ID   int
	Type string
	Data map[string]any
}

// events reads the run's whole event stream.
func (c *cluster) events(id string) []sse {
	c.t.Helper()
	resp, err := http.Get(c.url + "/v1/runs/" + id + "/events")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.Atoi(line[4:])
		case strings.HasPrefix(line, "event: "):
			cur.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.Data); err != nil {
				c.t.Fatal(err)
			}
		case line == "" && cur.Type != "":
			out = append(out, cur)
			cur = sse{}
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		c.t.Fatal(err)
	}
	return out
}

// workerRunning returns the worker whose process tree runs a command line
// containing s, or nil.
func (c *cluster) workerRunning(s string) *exec.Cmd {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		line, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(line, []byte(s)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		for pid > 1 {
			for _, w := range c.workers {
				if w.Process.Pid == pid {
					return w
				}
			}
			pid = parentOf(pid)
		}
	}
	return nil
}

func parentOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// A run survives the death of the worker executing it: kill -9 in the
// middle of a tool call, and the other worker of the host finishes the run
// with the result an undisturbed run has, no tool call applied twice, and
// every event in the API's event stream.
func TestRunSurvivesAWorkerKilledMidRun(t *testing.T) {
	c := newCluster(t)
	calm := c.workerKilledMidCall(t)
	if *update {
		c.recordHistory(t, calm)
	}
	c.approvalThroughTheAPI(t)
}

// workerKilledMidCall runs the script undisturbed, then again with the
// worker running its slow command killed with SIGKILL, and checks that
// the second run ends as the first, with the same patch (the changes of
// the whole run, the first command's included: the new worker computes it
// against the run's baseline in the store); it returns the undisturbed
// run's id.
func (c *cluster) workerKilledMidCall(t *testing.T) string {
	c.gitWorkspace("calm")
	calm := c.createRun("calm")
	want := c.waitRun(calm)
	c.checkScriptPatch(want.Result["patch"])

	c.gitWorkspace("killed")
	id := c.createRun("killed")
	var victim *exec.Cmd
	deadline := time.Now().Add(time.Minute)
	for victim == nil {
		if time.Now().After(deadline) {
			t.Fatal("no worker ran the slow command")
		}
		time.Sleep(50 * time.Millisecond)
		victim = c.workerRunning("sleep 4")
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := c.waitRun(id)

	for _, k := range []string{"exit_reason", "answer", "steps_used", "patch"} {
		if fmt.Sprint(got.Result[k]) != fmt.Sprint(want.Result[k]) {
			t.Errorf("result %s: %v after the kill, %v undisturbed", k, got.Result[k], want.Result[k])
		}
	}
	if got.Result["exit_reason"] != "finished" {
		t.Fatalf("the run ended %v: %v", got.Result["exit_reason"], got.Result["error"])
	}
	log, err := os.ReadFile(filepath.Join(c.dir, "ws", "killed", "log.txt"))
	if err != nil || string(log) != "one\ntwo\n" {
		t.Fatalf("log.txt is %q (%v), want each append once", log, err)
	}

	evs := c.checkEvents(id, "run_started model_action observation model_action observation model_action observation model_action run_finished")
	if calmEvs := c.events(calm); len(calmEvs) != len(evs) {
		t.Fatalf("%d events after the kill, %d undisturbed", len(evs), len(calmEvs))
	}
	return calm
}

// approvalThroughTheAPI runs a call that needs approval: it waits in the
// workflow until POST /v1/runs/{id}/approvals/{call_id} decides it.
func (c *cluster) approvalThroughTheAPI(t *testing.T) {
	id := c.createApprovalRun("approved")
	// The API server dies while the run waits; the one started in its
	// place follows the run, lists the call again and takes the decision.
	api := c.apis[0]
	if err := api.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = api.cmd.Wait()
	c.startAPI(api)
	if resp, err := http.Get(c.url + "/v1/runs/" + id); err != nil {
		t.Fatal(err)
	} else {
		var r runView
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || r.Status != "waiting_for_approval" {
			t.Fatalf("after the API server's restart the run is %q (%v): %v", r.Status, err, r.Result)
		}
	}
	c.waitApproval(id)
	c.decide(id, "approved")
}

// createApprovalRun starts, in workspace ws, a run whose one command needs
// approval, waits until the call is listed waiting for a decision, and
// checks that the command has not run.
func (c *cluster) createApprovalRun(ws string) string {
	t := c.t
	t.Helper()
	if err := os.MkdirAll(filepath.Join(c.dir, "ws", ws), 0o700); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"task": map[string]any{"prompt": "append once"}, "workspace": ws,
		"approval_policy": "commands", "model": map[string]any{"provider": "script",
			"responses": []string{toolCall("a1", "echo approved >> log.txt"), `{"type":"finish","answer":"ok"}`}}})
	resp, err := http.Post(c.url+"/v1/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var v runView
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("create a run: %d %v", resp.StatusCode, err)
	}
	c.waitApproval(v.ID)
	if _, err := os.Stat(filepath.Join(c.dir, "ws", ws, "log.txt")); !os.IsNotExist(err) {
		t.Fatalf("the call ran before it was approved (%v)", err)
	}
	return v.ID
}

// decide approves call a1 of run id (of createApprovalRun in workspace
// ws), waits until the run finishes and checks that the command ran once
// and the run's events.
func (c *cluster) decide(id, ws string) {
	t := c.t
	t.Helper()
	resp, err := http.Post(c.url+"/v1/runs/"+id+"/approvals/a1", "application/json", strings.NewReader(`{"decision":"approve"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("decide: %d", resp.StatusCode)
	}
	got := c.waitRun(id)
	if got.Result["exit_reason"] != "finished" {
		t.Fatalf("the approved run ended %v: %v", got.Result["exit_reason"], got.Result["error"])
	}
	if log, err := os.ReadFile(filepath.Join(c.dir, "ws", ws, "log.txt")); err != nil || string(log) != "approved\n" {
		t.Fatalf("log.txt is %q (%v)", log, err)
	}
	c.checkEvents(id, "run_started model_action approval_requested approval_decided observation model_action run_finished")
}

// checkEvents reads run id's events and checks that they are numbered
// 1, 2, … and have the types want (space-separated).
func (c *cluster) checkEvents(id, want string) []sse {
	c.t.Helper()
	evs := c.events(id)
	var types []string
	for i, ev := range evs {
		if ev.ID != i+1 {
			c.t.Fatalf("event %d has id %d", i+1, ev.ID)
		}
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != want {
		c.t.Fatalf("events of run %s:\n%s\nwant\n%s", id, got, want)
	}
	return evs
}

// waitApproval waits until run id lists call a1 waiting for approval,
// with its arguments.
func (c *cluster) waitApproval(id string) {
	t := c.t
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			evs, _ := os.ReadFile(filepath.Join(c.dir, "store", "runs", id, "events.jsonl"))
			resp, _ := http.Get(c.url + "/v1/runs/" + id)
			run, _ := io.ReadAll(resp.Body)
			t.Fatalf("the call was never listed as waiting for approval; run %s\nevents:\n%s", run, evs)
		}
		resp, err := http.Get(c.url + "/v1/runs/" + id + "/approvals")
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Approvals []struct {
				CallID    string         `json:"call_id"`
				Arguments map[string]any `json:"arguments"`
			} `json:"approvals"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Approvals) == 1 && list.Approvals[0].CallID == "a1" {
			if got := list.Approvals[0].Arguments["command"]; got != "echo approved >> log.txt" {
				t.Fatalf("the waiting call lists arguments %v", list.Approvals[0].Arguments)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recordHistory writes the undisturbed run's workflow history for the
// replay test of package temporal.
func (c *cluster) recordHistory(t *testing.T, runID string) {
	cl := temporaltestClient(t, c.address, c.ns)
	iter := cl.GetWorkflowHistory(context.Background(), "specloop-run-"+runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("../testdata", filepath.Base(*history)), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
