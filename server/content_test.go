package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/transcript"
)

// rawEvent is one Server-Sent Event with its data as sent.
type rawEvent struct{ id, name, data string }

func readRawSSE(t *testing.T, r io.Reader) []rawEvent {
	t.Helper()
	var out []rawEvent
	var cur rawEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = rawEvent{}
		case "id":
			cur.id = v
		case "event":
			cur.name = v
		case "data":
			cur.data += v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read event stream: %v", err)
	}
	return out
}

// split parses a stream with content: its summary events and its
// transcript entries, checking that every id is "P:S", the trace position
// and the transcript seq sent so far.
func split(t *testing.T, evs []rawEvent, from0, seq0 int) (summaries []rawEvent, entries []gen.TranscriptEntry) {
	t.Helper()
	pos, seq := from0, seq0
	for i, ev := range evs {
		p, s, ok := strings.Cut(ev.id, ":")
		gotP, err1 := strconv.Atoi(p)
		gotS, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("event %d: id %q is not P:S", i, ev.id)
		}
		if ev.name == runner.ContentEvent {
			e, err := transcript.ParseEntry([]byte(ev.data))
			if err != nil {
				t.Fatalf("event %d: not a TranscriptEntry: %v", i, err)
			}
			seq++
			if e.Seq != seq {
				t.Fatalf("entry seq %d, want %d", e.Seq, seq)
			}
			entries = append(entries, e)
		} else {
			pos++
			summaries = append(summaries, ev)
		}
		if gotP != pos || gotS != seq {
			t.Fatalf("event %d (%s): id %q, want %d:%d", i, ev.name, ev.id, pos, seq)
		}
	}
	return summaries, entries
}

func contentEvents(t *testing.T, ts *testServer, id, lastID string, content bool) []rawEvent {
	t.Helper()
	resp, err := ts.raw.GetRunEvents(context.Background(), id, &gen.GetRunEventsParams{Content: &content}, func(_ context.Context, req *http.Request) error {
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: status %d", resp.StatusCode)
	}
	return readRawSSE(t, resp.Body)
}

// A stream with content=true carries, beside the summary events (the same
// as a plain stream's), the transcript's entries as they are written,
// redacted; it resumes from a "P:S" id, live and after the run (from
// memory and, after a restart, from the files). A plain stream has none.
func TestContentEvents(t *testing.T) {
	t.Parallel()
	g := newGate()
	data := t.TempDir()
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: g.models, DataDir: data}})
	prompt := "BLOCK content\nThe token is " + testToken
	run := ts.create(blockRequest(prompt))
	g.waitEntered(t, prompt)

	// Both streams open while the run waits in its model.
	ctx := context.Background()
	on, err := ts.raw.GetRunEvents(ctx, run.Id, &gen.GetRunEventsParams{Content: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	off, err := ts.raw.GetRunEvents(ctx, run.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.release()
	live := readRawSSE(t, on.Body)
	plain := readRawSSE(t, off.Body)
	on.Body.Close()
	off.Body.Close()

	summaries, entries := split(t, live, 0, 0)
	if len(summaries) != len(plain) {
		t.Fatalf("%d summary events with content, %d without", len(summaries), len(plain))
	}
	for i, ev := range plain {
		if ev.name == runner.ContentEvent || strings.Contains(ev.data, "BLOCK content") {
			t.Fatalf("a plain stream has content: %+v", ev)
		}
		if summaries[i].name != ev.name || summaries[i].data != ev.data {
			t.Errorf("summary %d differs with content: %+v, without: %+v", i+1, summaries[i], ev)
		}
	}
	if len(entries) < 4 || entries[0].EventType != gen.TraceEventTypeRunStarted || entries[len(entries)-1].EventType != gen.TraceEventTypeRunFinished {
		t.Fatalf("entries: %+v", entries)
	}
	if task := *entries[0].Task; !strings.HasPrefix(task, "BLOCK content\n") || strings.Contains(task, testToken) || !strings.Contains(task, transcript.Redacted) {
		t.Errorf("the task as streamed: %q", task)
	}
	if strings.Contains(live[len(live)-1].data, testToken) {
		t.Error("the stream holds the token")
	}
	var args, output bool
	for _, e := range entries {
		if e.Action != nil {
			call, err := e.Action.AsToolCall()
			args = args || err == nil && call.Arguments["left"] != nil
		}
		output = output || e.Observation != nil && strings.Contains(e.Observation.Content, "84")
	}
	if !args || !output {
		t.Errorf("the entries lack the call's arguments (%v) or its result (%v)", args, output)
	}
	if got := ts.wait(run.Id); got.TaskLine == nil || *got.TaskLine != "BLOCK content" {
		t.Errorf("task_line: %v, want the first line", got.TaskLine)
	}
	if got := ts.wait(ts.create(calcRequest()).Id); got.TaskLine == nil || *got.TaskLine != calcPrompt {
		t.Errorf("task_line of a one-line task: %v", got.TaskLine)
	}

	// Resume after each event: the rest arrives, nothing twice.
	resume := func(t *testing.T, ts *testServer) {
		for k := range live {
			got := contentEvents(t, ts, run.Id, live[k].id, true)
			p, s, _ := strings.Cut(live[k].id, ":")
			from, _ := strconv.Atoi(p)
			seq, _ := strconv.Atoi(s)
			sums, ents := split(t, got, from, seq)
			if len(sums) != len(summaries)-from || len(ents) != len(entries)-seq {
				t.Fatalf("after %s: %d summaries and %d entries, want %d and %d", live[k].id, len(sums), len(ents), len(summaries)-from, len(entries)-seq)
			}
		}
		// A plain position sends the transcript from its start.
		if _, ents := split(t, contentEvents(t, ts, run.Id, "2", true), 2, 0); len(ents) != len(entries) {
			t.Errorf("after 2: %d entries, want all %d", len(ents), len(entries))
		}
	}
	t.Run("finished", func(t *testing.T) { resume(t, ts) })
	ts.close()
	t.Run("restarted", func(t *testing.T) {
		again := newTestServer(t, server.Config{Config: runner.Config{DataDir: data, WorkspaceRoot: ts.cfg.WorkspaceRoot}})
		if _, ents := split(t, contentEvents(t, again, run.Id, "", true), 0, 0); len(ents) != len(entries) {
			t.Fatalf("from the files: %d entries, want %d", len(ents), len(entries))
		}
		resume(t, again)
		if got, err := again.sdk.GetRun(ctx, run.Id); err != nil || got.TaskLine == nil || *got.TaskLine != "BLOCK content" {
			t.Errorf("task_line after a restart: %v %v", got.TaskLine, err)
		}
	})
}

// Content is as protected as the transcript: a server with a token wants
// it; one without a token (on loopback) serves loopback Host names only,
// the person at its keyboard, who may read the transcript too. A run with
// transcript false streams no content and lists no task line.
func TestContentEventsNeedAuth(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	id := ts.wait(ts.create(calcRequest()).Id).Id
	path := "/v1/runs/" + id + "/events?content=true"
	if status, _, body := ts.do(http.MethodGet, path, "", nil, "Authorization", ""); status != http.StatusUnauthorized || strings.Contains(string(body), calcPrompt) {
		t.Errorf("without the token: %d %s", status, body)
	}
	if status, _, body := ts.do(http.MethodGet, path, "", nil, "Authorization", "Bearer wrong-token-0123456789"); status != http.StatusUnauthorized || strings.Contains(string(body), calcPrompt) {
		t.Errorf("with a wrong token: %d %s", status, body)
	}

	off := calcRequest()
	off.Transcript = new(bool)
	none := ts.wait(ts.create(off).Id)
	if none.TaskLine != nil {
		t.Errorf("a run with transcript false lists its task line %q", *none.TaskLine)
	}
	for _, ev := range contentEvents(t, ts, none.Id, "", true) {
		if ev.name == runner.ContentEvent {
			t.Fatalf("a run with transcript false streams content: %+v", ev)
		}
	}

	base := startNoToken(t, server.Config{})
	ctx := context.Background()
	c, err := sdk.New(base, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.CreateRun(ctx, calcRequest())
	if err == nil {
		_, err = c.Wait(ctx, run.Id)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for host, want := range map[string]int{"127.0.0.1:" + port: http.StatusOK, "localhost": http.StatusOK, "evil.example": http.StatusForbidden, "10.0.0.1:" + port: http.StatusForbidden} {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/runs/"+run.Id+"/events?content=true", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK) != strings.Contains(string(body), calcPrompt) {
			t.Errorf("no token, Host %q: %d %.200s", host, resp.StatusCode, body)
		}
	}
}
