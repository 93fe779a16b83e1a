package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// swapDir replaces dir with a symbolic link to target, keeping the
// original directory as dir.old: the attack of a process that races the
// server between resolving a workspace and using it.
func swapDir(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceSwapToolCall: a workspace replaced by a symbolic link to an
// outside directory after the server resolved it is not followed: the
// tool call works on the directory it resolved.
func TestWorkspaceSwapToolCall(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	dir := filepath.Join(ts.cfg.WorkspaceRoot, "ws")
	outside := t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("INSIDE-DATA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OUTSIDE-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var swapped atomic.Bool
	server.SetWorkspaceHook(ts.srv, func(name string) {
		if name == "ws" && swapped.CompareAndSwap(false, true) {
			swapDir(t, dir, outside)
		}
	})
	status, _, body := ts.do(http.MethodPost, "/v1/tools/read_file?workspace=ws", "application/json", strings.NewReader(`{"path":"secret.txt"}`))
	if !swapped.Load() {
		t.Fatal("the hook never ran")
	}
	if status != http.StatusOK || strings.Contains(string(body), "OUTSIDE") || !strings.Contains(string(body), "INSIDE-DATA") {
		t.Fatalf("read_file after the swap: %d %s", status, body)
	}
	// The same for a write: it lands in the original directory.
	swapped.Store(false)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".old", dir); err != nil {
		t.Fatal(err)
	}
	status, _, body = ts.do(http.MethodPost, "/v1/tools/write_file?workspace=ws", "application/json", strings.NewReader(`{"path":"new.txt","content":"x\n"}`))
	if status != http.StatusOK {
		t.Fatalf("write_file after the swap: %d %s", status, body)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("write_file wrote outside the workspace root")
	}
	if _, err := os.Stat(filepath.Join(dir+".old", "new.txt")); err != nil {
		t.Fatalf("write_file did not write in the workspace it resolved: %v", err)
	}
}

// TestWorkspaceSwapQueuedRun: a queued run keeps the workspace it was
// created in, whatever happens to the name before it starts.
func TestWorkspaceSwapQueuedRun(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models, MaxConcurrent: 1}})
	dir := filepath.Join(ts.cfg.WorkspaceRoot, "ws")
	outside := t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	blocker := ts.create(blockRequest("BLOCK first"))
	g.waitEntered(t, "BLOCK first")
	ws := "ws"
	queued := ts.create(gen.CreateRunRequest{
		Task:      gen.Task{Prompt: "write a note"},
		Workspace: &ws,
		Model: sdk.Script(
			`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"note.txt","content":"hello\n"}}`,
			`{"type":"finish","answer":"done"}`),
	})
	if queued.Status != gen.RunStatusQueued {
		t.Fatalf("the second run is %s, want queued", queued.Status)
	}
	swapDir(t, dir, outside)
	g.release()
	ts.wait(blocker.Id)
	run := ts.wait(queued.Id)
	if run.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result: %+v", run.Result)
	}
	if _, err := os.Stat(filepath.Join(outside, "note.txt")); err == nil {
		t.Fatal("the queued run wrote outside the workspace root")
	}
	if data, err := os.ReadFile(filepath.Join(dir+".old", "note.txt")); err != nil || string(data) != "hello\n" {
		t.Fatalf("the run did not write in its workspace: %q %v", data, err)
	}
	if run.Result.Patch == nil || !strings.Contains(*run.Result.Patch, "note.txt") {
		t.Errorf("patch: %v", run.Result.Patch)
	}
}

// rawConn opens a TCP connection to the test server, optionally from a
// given loopback source address.
func rawConn(t *testing.T, ts *testServer, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", ts.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closes c (after any
// response) within the wait.
func closedByServer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowBodyCutOff: a client that sends a request's headers and then
// trickles (or stops sending) its body is cut off by the read timeout,
// and the server keeps serving others meanwhile.
func TestSlowBodyCutOff(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{ReadTimeout: 300 * time.Millisecond, ReadHeaderTimeout: 300 * time.Millisecond})
	var conns []net.Conn
	for range 3 {
		c := rawConn(t, ts, "")
		fmt.Fprintf(c, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"task\":", testToken)
		conns = append(conns, c)
	}
	// A slow header is cut off too.
	slowHeader := rawConn(t, ts, "")
	fmt.Fprintf(slowHeader, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	conns = append(conns, slowHeader)
	if status, _, _ := ts.do(http.MethodGet, "/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("healthz while slow clients wait: %d", status)
	}
	for i, c := range conns {
		if !closedByServer(c, 20*time.Second) {
			t.Fatalf("slow connection %d is still open", i)
		}
	}
}

// TestConnectionCap: beyond MaxConnections busy connections a connection
// is not served until another one ends.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{MaxConnections: 2})
	// Two connections busy with a request whose body never comes.
	a := rawConn(t, ts, "")
	b := rawConn(t, ts, "")
	for _, c := range []net.Conn{a, b} {
		fmt.Fprintf(c, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", testToken)
	}
	waitConns(t, ts, 2, 2)
	got := make(chan int, 1)
	go func() {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
		resp, err := c.Get(ts.http.URL + "/healthz")
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	select {
	case code := <-got:
		t.Fatalf("a third connection was served (%d) while two were busy", code)
	case <-time.After(300 * time.Millisecond):
	}
	a.Close()
	if code := <-got; code != http.StatusOK {
		t.Fatalf("the waiting connection got %d once a slot was free", code)
	}
}

// waitConns waits (30 s at most) until the server has busy busy
// connections and open open ones.
func waitConns(t *testing.T, ts *testServer, busy, open int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, o := server.Conns(ts.srv)
		if b == busy && o == open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections: %d busy and %d open, want %d and %d", b, o, busy, open)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleConnectionsShed: sockets that are open but send nothing, or
// wait between keep-alive requests, never hold the connections others
// need: at the cap a new connection closes the one idle the longest.
// Before the fix a request waited until an idle socket timed out.
func TestIdleConnectionsShed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{MaxConnections: 4, ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute})
	var idle []net.Conn
	for range 4 {
		idle = append(idle, rawConn(t, ts, ""))
	}
	// One keep-alive connection that made a request and waits for the next.
	fmt.Fprintf(idle[3], "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(idle[3]), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz on a keep-alive connection: %v", err)
	}
	waitConns(t, ts, 0, 4)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	for i := range 6 {
		resp, err := c.Get(ts.http.URL + "/healthz")
		if err != nil {
			t.Fatalf("healthz %d with the cap's worth of idle sockets open: %v", i, err)
		}
		resp.Body.Close()
	}
	// The oldest idle sockets were closed to make room.
	if !closedByServer(idle[0], 20*time.Second) {
		t.Error("the oldest idle socket is still open")
	}
}

// TestStreamsLeaveReserve: event streams at their cap leave connections
// to the other requests, even when MaxStreams is as high as
// MaxConnections, and the cap's worth of idle sockets on top delays
// nothing: /healthz and run creation still answer. Before the fix the
// streams took every connection and both waited forever.
func TestStreamsLeaveReserve(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{MaxConnections: 4, MaxStreams: 4, MaxStreamsPerClient: 4, Config: runner.Config{Models: g.models}})
	run := ts.create(blockRequest("BLOCK reserve"))
	g.waitEntered(t, "BLOCK reserve")
	var open []*http.Response
	for i := 0; ; i++ {
		done := make(chan *http.Response, 1)
		go func() { done <- openStream(t, ts, run.Id, "") }()
		var resp *http.Response
		select {
		case resp = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("stream %d: no answer: the streams took every connection", i)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			resp.Body.Close()
			break
		}
		if resp.StatusCode != http.StatusOK || i >= 4 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		open = append(open, resp)
	}
	if len(open) != 3 {
		t.Fatalf("%d streams open, want 3 (4 connections less a reserve of 1)", len(open))
	}
	for range 4 {
		rawConn(t, ts, "")
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Get(ts.http.URL + "/healthz")
	if err != nil {
		t.Fatalf("healthz with the streams at their cap: %v", err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.http.URL+"/v1/runs", strings.NewReader(`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["{\"type\":\"finish\",\"answer\":\"a\"}"]}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatalf("create with the streams at their cap: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("create with the streams at their cap: %d", resp.StatusCode)
	}
	g.release()
	for _, r := range open {
		readSSE(t, r.Body)
	}
}

// openStream opens the event stream of run id from the loopback source
// address from and returns the response (its body still open).
func openStream(t *testing.T, ts *testServer, id, from string) *http.Response {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	// The responses, 429s included, are checked against the spec.
	c := &http.Client{Transport: &contractTransport{t: t, next: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}}
	req, err := http.NewRequest(http.MethodGet, ts.http.URL+"/v1/runs/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.Do(req)
	if err != nil && from != "" && errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("this system cannot connect from %s: %v", from, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestStreamCaps: idle event streams beyond the total cap or the
// per-client cap get 429, and the server keeps serving everything else.
func TestStreamCaps(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{MaxStreams: 3, MaxStreamsPerClient: 2, Config: runner.Config{Models: g.models}})
	run := ts.create(blockRequest("BLOCK streams"))
	g.waitEntered(t, "BLOCK streams")
	var open []*http.Response
	for range 2 {
		resp := openStream(t, ts, run.Id, "127.0.0.1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		open = append(open, resp)
	}
	tooMany := func(resp *http.Response, what string) {
		t.Helper()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: %d, want 429", what, resp.StatusCode)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s: %d %s %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		// A stream slot frees when a client leaves, not within a second.
		if got := resp.Header.Get("Retry-After"); got != "5" {
			t.Errorf("%s: Retry-After %q, want the stream cap's 5", what, got)
		}
	}
	tooMany(openStream(t, ts, run.Id, "127.0.0.1"), "a third stream from one client")
	third := openStream(t, ts, run.Id, "127.0.0.2")
	if third.StatusCode != http.StatusOK {
		t.Fatalf("a stream from another client: %d", third.StatusCode)
	}
	open = append(open, third)
	tooMany(openStream(t, ts, run.Id, "127.0.0.3"), "a stream beyond the total")
	// Everything else still works.
	if status, _, _ := ts.do(http.MethodGet, "/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("healthz with the streams full: %d", status)
	}
	other := ts.create(calcRequest())
	// A closed stream frees its place.
	open[0].Body.Close()
	open = open[1:]
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := openStream(t, ts, run.Id, "127.0.0.1")
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp)
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("a closed stream never freed its place")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The streams that were let in run to the end of the run.
	g.release()
	for i, resp := range open {
		evs := readSSE(t, resp.Body)
		if n := len(evs); n == 0 || evs[n-1].Event != string(gen.TraceEventTypeRunFinished) {
			t.Errorf("stream %d ended without run_finished", i)
		}
	}
	for _, id := range []string{run.Id, other.Id} {
		for {
			r, err := ts.sdk.GetRun(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == gen.RunStatusFinished {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not finish", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// startNoToken serves a token-less server and returns its base URL.
func startNoToken(t *testing.T, cfg server.Config) string {
	t.Helper()
	cfg.DataDir, cfg.WorkspaceRoot = t.TempDir(), t.TempDir()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := serveHTTP(srv)
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		hs.Close()
	})
	return hs.URL
}

// TestHostHeader: without a token, only requests naming a loopback host
// (or an allowed one) are served, so a web page cannot reach the server
// through DNS rebinding; with a token any Host is fine.
func TestHostHeader(t *testing.T) {
	t.Parallel()
	base := startNoToken(t, server.Config{AllowedHosts: []string{"agent.internal"}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	get := func(base, host, path string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := (&http.Client{Transport: &contractTransport{t: t, next: http.DefaultTransport}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	for _, host := range []string{"localhost", "localhost:" + port, "LOCALHOST:" + port, "127.0.0.1:" + port, "127.1.2.3", "[::1]:" + port, "agent.internal:8080", "Agent.Internal"} {
		if status, _, body := get(base, host, "/v1/tools"); status != http.StatusOK {
			t.Errorf("Host %q: %d %s", host, status, body)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "localhost.evil.example", "127.0.0.1.evil.example", "10.0.0.1:" + port, "[::2]", "agent.internal.evil"} {
		for _, path := range []string{"/v1/tools", "/healthz", "/v1/runs"} {
			status, ctype, body := get(base, host, path)
			if status != http.StatusForbidden || ctype != "application/problem+json" || strings.Contains(body, "evil") {
				t.Errorf("Host %q on %s: %d %s %.200s", host, path, status, ctype, body)
			}
		}
	}
	// With a token the token is the protection: a proxy may use any name.
	ts := newTestServer(t, server.Config{})
	req, _ := http.NewRequest(http.MethodGet, ts.http.URL+"/v1/tools", nil)
	req.Host = "api.example.com"
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a token and a proxy's Host: %d", resp.StatusCode)
	}
}

// TestDataDirPrivate: the data directory holds run results (answers,
// patches, check output), so it and its files are private to the server's
// user, even when they existed before with wider permissions.
func TestDataDirPrivate(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "runs.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, server.Config{Config: runner.Config{DataDir: data}})
	run := ts.wait(ts.create(calcRequest()).Id)
	for path, want := range map[string]os.FileMode{
		data:                              0o700,
		filepath.Join(data, "traces"):     0o700,
		filepath.Join(data, "runs.jsonl"): 0o600,
		filepath.Join(data, "traces", run.Id+".jsonl"): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(path), got, want)
		}
	}
}

// TestStreamOutlivesReadTimeout: the read timeout bounds receiving a
// request, not the response: an event stream that stays open longer
// still gets every event to run_finished.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	g := newGate()
	defer g.release()
	ts := newTestServer(t, server.Config{ReadTimeout: 200 * time.Millisecond, Config: runner.Config{Models: g.models}})
	run := ts.create(blockRequest("BLOCK long"))
	g.waitEntered(t, "BLOCK long")
	resp := openStream(t, ts, run.Id, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	time.Sleep(600 * time.Millisecond) // well past the read timeout
	g.release()
	evs := readSSE(t, resp.Body)
	if n := len(evs); n == 0 || evs[n-1].Event != string(gen.TraceEventTypeRunFinished) {
		t.Fatalf("the stream ended without run_finished: %d events", n)
	}
}

// TestPartialRequestsShed: sockets that sent part of a request's headers
// and then stall (slowloris) are no busier than silent ones: at the cap a
// new connection closes the one that has waited the longest for its
// request, with a token or without. (net/http reports a connection
// active only once a request's headers are whole; this attack held when
// it was tried, and the test keeps it so.)
func TestPartialRequestsShed(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"", "secret-token-for-test"} {
		t.Run(fmt.Sprintf("token=%v", token != ""), func(t *testing.T) {
			ts := newTestServer(t, server.Config{MaxConnections: 4, ReadHeaderTimeout: 5 * time.Minute, ReadTimeout: 5 * time.Minute, Token: token})
			var stalled []net.Conn
			for range 4 {
				c := rawConn(t, ts, "")
				fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
				stalled = append(stalled, c)
			}
			waitConns(t, ts, 0, 4)
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
			for i := range 6 {
				resp, err := c.Get(ts.http.URL + "/healthz")
				if err != nil {
					t.Fatalf("healthz %d with the cap's worth of stalled requests open: %v", i, err)
				}
				resp.Body.Close()
			}
			if !closedByServer(stalled[0], 20*time.Second) {
				t.Error("the oldest stalled socket is still open")
			}
		})
	}
}
