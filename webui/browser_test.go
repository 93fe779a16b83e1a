package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// The browser tests drive the page in Debian's headless Chromium. They
// skip when no Chromium is installed, except under CI=true, where .ci/run
// installs it and a missing browser is a failure.

const uiToken = "ui-test-token-0123456789"

// chromiumPath finds the browser, or skips (fails under CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: CI must install it (.ci/run: apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH: install Debian's chromium (apt-get install -y chromium) to run the browser tests")
	return ""
}

// artifacts is the directory the screenshots go to: $SPECLOOP_UI_ARTIFACTS
// when set, else a temporary directory of the test.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SPECLOOP_UI_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The test's models are the server's default (script) models, paced by
// the prompt: "[gate]" waits for the test's gate before every model call
// after the first, "[block]" waits until the run is cancelled, and
// "[pace]" waits 3 ms before each call, so that a long script run stays
// live for seconds.
type pacer struct{ gate chan struct{} }

func (p *pacer) models(cfg gen.ModelConfig) (agent.Model, error) {
	m, err := runner.DefaultModels(cfg)
	if err != nil {
		return nil, err
	}
	return &pacedModel{inner: m, p: p}, nil
}

type pacedModel struct {
	inner agent.Model
	p     *pacer
	calls int
}

func (m *pacedModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	task := req.Task
	m.calls++
	var wait <-chan struct{}
	switch {
	case strings.Contains(task.Prompt, "[gate]") && m.calls > 1:
		wait = m.p.gate
	case strings.Contains(task.Prompt, "[block]"):
		wait = make(chan struct{})
	case strings.Contains(task.Prompt, "[pace]"):
		t := time.NewTimer(3 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return agent.Turn{}, ctx.Err()
		}
	}
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return agent.Turn{}, ctx.Err()
		}
	}
	return m.inner.Next(ctx, req)
}

// uiServer is a specloop server on a loopback port, as `specloop serve`
// runs it, with an sdk client.
type uiServer struct {
	url string
	sdk *sdk.Client
	ws  string
}

func startServer(t *testing.T, cfg server.Config) *uiServer {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.WorkspaceRoot == "" {
		cfg.WorkspaceRoot = t.TempDir()
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go func() { _ = hs.Serve(srv.Listener(ln)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		_ = hs.Close()
	})
	u := "http://" + ln.Addr().String()
	c, err := sdk.New(u, sdk.Config{Token: cfg.Token})
	if err != nil {
		t.Fatal(err)
	}
	return &uiServer{url: u, sdk: c, ws: cfg.WorkspaceRoot}
}

// browser is one headless Chromium tab with what the test watches: every
// request the page makes, and every console error, exception and
// security report (a CSP violation is one).
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	problems []string
}

// shared is the one Chromium the package's tests open their tabs in
// (starting a browser per test cost a second each); TestMain stops it.
var shared struct {
	once sync.Once
	ctx  context.Context
	err  error
	stop func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	os.Exit(code)
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser: runs without -short (go test ./webui, and .ci/run's go test ./...)")
	}
	exe := chromiumPath(t)
	shared.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe),
			chromedp.NoSandbox, // the tests run as root
			chromedp.DisableGPU,
			chromedp.WindowSize(1280, 900),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		shared.stop = func() { cancel(); cancelAlloc() }
		shared.ctx, shared.err = ctx, chromedp.Do(ctx)
	})
	if shared.err != nil {
		t.Fatalf("start chromium: %v", shared.err)
	}
	// A tab of its own: sessionStorage (the token) is per tab, and every
	// test serves its own origin.
	ctx, cancel := chromedp.NewContext(shared.ctx)
	t.Cleanup(cancel)
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.problems = append(b.problems, "exception: "+msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, "console.error: "+strings.Join(args, " "))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				b.problems = append(b.problems, fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network events: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("log events: %v", err)
	}
	return b
}

// do runs the actions, failing the test with what on an error.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression, awaiting a promise.
func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", clip(js), err)
	}
	return v
}

// waitJS waits until a JavaScript condition holds.
func (b *browser) waitJS(t *testing.T, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText.slice(0, 2000)`))
			t.Fatalf("%s: %s still false after 30 s; the page says:\n%s", what, cond, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// screenshot writes the whole page as dir/name.png, or only the viewport
// when the page is very long.
func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	shot := chromedp.FullScreenshot(100)
	if eval[int](t, b, `document.documentElement.scrollHeight`) > 4000 {
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(b.ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// checkClean fails the test for any request to a host other than the
// server's, any URL carrying the token, and any console error, exception
// or CSP violation but those that contain an expected text.
func (b *browser) checkClean(t *testing.T, serverURL, token string, expected ...string) {
	t.Helper()
	want, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		t.Fatal("the browser reported no requests: the network listener is not working")
	}
	for _, r := range b.requests {
		u, err := url.Parse(r)
		if err != nil || u.Host != want.Host || u.Scheme != want.Scheme {
			t.Errorf("the page requested %s: another origin than the server's %s", clip(r), want.Host)
		}
		if token != "" && (strings.Contains(r, token) || strings.Contains(r, "wrong-token")) {
			t.Errorf("a token is in a URL: %s", clip(r))
		}
	}
problems:
	for _, p := range b.problems {
		for _, e := range expected {
			if strings.Contains(p, e) {
				continue problems
			}
		}
		t.Errorf("browser: %s", p)
	}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func rowsJS(tbody string) string {
	return fmt.Sprintf("document.querySelectorAll('#%s tr').length", tbody)
}

// TestBrowserRuns drives the page through a whole session on a server
// with a token: the token asked once, a run started from the form and
// followed live to its end (step rows, result, the coloured diff), another
// run cancelled from its page, each page reloaded with the same state,
// the list and its status filter; at laptop and phone widths, light and
// dark; and never a request to another host.
func TestBrowserRuns(t *testing.T) {
	p := &pacer{gate: make(chan struct{})}
	srv := startServer(t, server.Config{Token: uiToken, Config: runner.Config{Models: p.models}})
	b := newBrowser(t)
	shots := artifacts(t)
	ctx := b.ctx

	// The token: asked for when the API answers 401 (again when it
	// refuses the one entered), kept in sessionStorage, never put in a URL.
	b.do(t, "open the list", chromedp.Navigate(srv.url+"/ui/"))
	b.waitJS(t, "the token dialog", `document.getElementById('token-dialog').open`)
	b.do(t, "enter a wrong token",
		chromedp.SendKeys(chromedp.ID("token-input"), "wrong-token"),
		chromedp.Click(chromedp.ID("token-save")),
	)
	b.waitJS(t, "the wrong token refused", `document.getElementById('token-dialog').open && document.getElementById('token-why').textContent.includes('refused')`)
	eval[string](t, b, `document.getElementById('token-input').value = ''`)
	b.do(t, "enter the token",
		chromedp.SendKeys(chromedp.ID("token-input"), uiToken),
		chromedp.Click(chromedp.ID("token-save")),
	)
	b.waitJS(t, "the list after the token", `document.body.dataset.listLoaded >= 1 && !document.getElementById('token-dialog').open`)
	stored := eval[string](t, b, `sessionStorage.getItem('specloop.token')`)
	if stored != uiToken {
		t.Fatalf("sessionStorage holds %q, want the token", stored)
	}

	// Start a run from the form. It writes a file (so it has a patch),
	// fails one call (an error row), and waits at the gate before its
	// second model call, so the page is seen following it live.
	responses := strings.Join([]string{
		`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"notes.txt","content":"one\ntwo\n"}}`,
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`,
		`{"type":"finish","answer":"notes written"}`,
	}, "\n")
	b.do(t, "fill the form, with a workspace outside the root",
		chromedp.Click(chromedp.ID("nav-new")),
		chromedp.WaitVisible(chromedp.ID("f-task")),
		chromedp.SendKeys(chromedp.ID("f-task"), "[gate] write the notes"),
		chromedp.SetValue(chromedp.ID("f-responses"), responses),
		chromedp.SendKeys(chromedp.ID("f-workspace"), "../outside"),
		chromedp.Click(chromedp.ID("f-submit")),
	)
	b.waitJS(t, "the server's refusal, on the field", `!document.getElementById('form-msg').hidden && document.activeElement.id === 'f-workspace'`)
	if msg := eval[string](t, b, `document.getElementById('form-msg').textContent`); !strings.Contains(msg, "workspace") {
		t.Errorf("the form says %q after a refused workspace", msg)
	}
	eval[string](t, b, `document.getElementById('f-workspace').value = ''`)
	b.do(t, "fix the form", chromedp.SendKeys(chromedp.ID("f-max-steps"), "5"))
	b.screenshot(t, shots, "new-run-form")
	b.do(t, "start the run", chromedp.Click(chromedp.ID("f-submit")))
	b.waitJS(t, "the run page, live", `location.hash.startsWith('#/runs/') && `+rowsJS("steps-body")+` === 1 && document.getElementById('stream-state').textContent === 'live'`)
	runID := eval[string](t, b, `document.getElementById('run-id').textContent`)
	if r, err := srv.sdk.GetRun(ctx, runID); err != nil || r.Status == gen.RunStatusFinished {
		t.Fatalf("the run must still be in flight while the page shows its first step: %+v, %v", r, err)
	}
	cancelShown := eval[bool](t, b, `!document.getElementById('cancel-run').hidden`)
	if !cancelShown {
		t.Error("the cancel button is hidden while the run is in flight")
	}
	b.screenshot(t, shots, "run-live")
	close(p.gate)
	b.waitJS(t, "the run finished, live", `document.body.dataset.runState === 'finished' && `+rowsJS("steps-body")+` === 3`)
	checkRunPage := func(when string) {
		t.Helper()
		type page struct {
			Rows      int      `json:"rows"`
			ErrorRows int      `json:"errorRows"`
			Tools     string   `json:"tools"`
			Exit      string   `json:"exit"`
			Answer    string   `json:"answer"`
			Added     []string `json:"added"`
			Removed   int      `json:"removed"`
			Cancel    bool     `json:"cancel"`
			Tokens    bool     `json:"tokens"`
		}
		got := eval[page](t, b, `({
			rows: document.querySelectorAll('#steps-body tr').length,
			errorRows: document.querySelectorAll('#steps-body tr.error').length,
			tools: [...document.querySelectorAll('#steps-body td:nth-child(3)')].map(td => td.textContent).join('|'),
			exit: document.querySelector('#result-meta dd').textContent,
			answer: document.getElementById('answer').textContent,
			added: [...document.querySelectorAll('#patch .add')].map(s => s.textContent),
			removed: document.querySelectorAll('#patch .del').length,
			cancel: !document.getElementById('cancel-run').hidden,
			tokens: document.getElementById('run-meta').textContent.includes('Tokens'),
		})`)
		if got.Rows != 3 || got.ErrorRows != 1 || got.Exit != string(gen.ExitReasonFinished) || got.Answer != "notes written" || got.Cancel {
			t.Errorf("%s: the run page shows %+v", when, got)
		}
		if !strings.Contains(got.Tools, "write_file(content, path)") || !strings.Contains(got.Tools, "calculator(left, operation, right)") {
			t.Errorf("%s: the tool calls column is %q", when, got.Tools)
		}
		if strings.Join(got.Added, "|") != "+one|+two" {
			t.Errorf("%s: the diff's added lines are %q, want +one and +two", when, got.Added)
		}
	}
	checkRunPage("live")
	b.screenshot(t, shots, "run-finished")
	b.do(t, "reload the run page", chromedp.Reload())
	b.waitJS(t, "the run page after reload", `document.body.dataset.runState === 'finished' && `+rowsJS("steps-body")+` === 3 && document.getElementById('stream-state').textContent === 'ended'`)
	checkRunPage("after reload")

	// Cancel another run from its page.
	blocked, err := srv.sdk.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "[block] wait"}, Model: sdk.Script(`{"type":"finish","answer":"never"}`)})
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, "open the blocked run", chromedp.Navigate(srv.url+"/ui/#/runs/"+blocked.Id))
	// Once run_started is shown the layout holds still for the click.
	b.waitJS(t, "the cancel button", `!document.getElementById('cancel-run').hidden && document.getElementById('stream-state').textContent === 'live' && document.getElementById('run-meta').textContent.includes('Tools')`)
	b.do(t, "cancel", chromedp.Click(chromedp.ID("cancel-run")))
	b.waitJS(t, "the cancelled run", `document.body.dataset.runState === 'finished'`)
	exit := eval[string](t, b, `document.querySelector('#result-meta dd').textContent`)
	if exit != string(gen.ExitReasonCancelled) {
		t.Errorf("after cancel the page shows exit reason %q", exit)
	}
	if r, err := srv.sdk.GetRun(ctx, blocked.Id); err != nil || r.Result == nil || r.Result.ExitReason != gen.ExitReasonCancelled {
		t.Errorf("the server's record of the cancelled run: %+v, %v", r, err)
	}
	b.screenshot(t, shots, "run-cancelled")
	b.do(t, "reload the cancelled run", chromedp.Reload())
	b.waitJS(t, "the cancelled run after reload", `document.body.dataset.runState === 'finished' && document.getElementById('cancel-run').hidden`)
	exit = eval[string](t, b, `document.querySelector('#result-meta dd').textContent`)
	if exit != string(gen.ExitReasonCancelled) {
		t.Errorf("after reload the page shows exit reason %q", exit)
	}

	// The list: both runs, then the status filter, kept across a reload.
	b.do(t, "open the list", chromedp.Navigate(srv.url+"/ui/#/"))
	b.waitJS(t, "both runs listed", rowsJS("runs-body")+` === 2`)
	b.screenshot(t, shots, "list")
	if _, err := srv.sdk.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "a third run"}, Model: sdk.Script(`{"type":"finish","answer":"done"}`)}); err != nil {
		t.Fatal(err)
	}
	b.waitJS(t, "the list updated live with the third run", rowsJS("runs-body")+` === 3`)
	b.do(t, "filter running runs", chromedp.SetValue(chromedp.ID("status-filter"), string(gen.RunStatusRunning)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.getElementById('status-filter').dispatchEvent(new Event('change'))`)(ctx, t)
			return err
		}))
	b.waitJS(t, "no running runs", rowsJS("runs-body")+` === 0 && location.hash === '#/?status=running'`)
	b.do(t, "reload the filtered list", chromedp.Reload())
	b.waitJS(t, "the filter after reload", `document.getElementById('status-filter').value === 'running' && document.body.dataset.listLoaded >= 1 && `+rowsJS("runs-body")+` === 0`)

	// Accessibility basics: every form control has a label, and the
	// focused control is outlined.
	unlabelled := eval[[]string](t, b, `[...document.querySelectorAll('input, select, textarea')].filter(e => e.labels.length === 0).map(e => e.id)`)
	if len(unlabelled) > 0 {
		t.Errorf("controls without a label: %v", unlabelled)
	}
	b.do(t, "focus by keyboard", chromedp.Navigate(srv.url+"/ui/#/new"), chromedp.WaitVisible(chromedp.ID("f-task")))
	b.waitJS(t, "the form's focus", `document.activeElement && document.activeElement.id === 'f-task'`)
	b.do(t, "tab", chromedp.KeyEvent("\t"))
	outline := eval[string](t, b, `document.activeElement.id + ' ' + getComputedStyle(document.activeElement).outlineStyle`)
	if outline != "f-workspace solid" {
		t.Errorf("after Tab from the task the focus is %q, want f-workspace outlined solid", outline)
	}

	// A phone's width: no horizontal scrolling of the page itself (wide
	// tables scroll in their own box); and dark mode.
	b.do(t, "phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(srv.url+"/ui/#/runs/"+runID))
	b.waitJS(t, "the run page on a phone", `document.body.dataset.runState === 'finished'`)
	overflow := eval[int](t, b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`)
	if overflow > 0 {
		t.Errorf("at 390 px the page is %d px wider than the screen", overflow)
	}
	b.screenshot(t, shots, "run-phone")
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	b.do(t, "dark mode", chromedp.Navigate(srv.url+"/ui/#/"))
	b.waitJS(t, "the list, dark", rowsJS("runs-body")+` === 3`)
	bg := eval[string](t, b, `getComputedStyle(document.body).backgroundColor`)
	if bg != "rgb(15, 18, 22)" {
		t.Errorf("in dark mode the background is %s", bg)
	}
	b.screenshot(t, shots, "list-phone-dark")

	// The first request, before the token, was refused, and so was the
	// run with a workspace outside the root.
	b.checkClean(t, srv.url, uiToken, "the server responded with a status of 401", "the server responded with a status of 400")
}

// seedRuns writes a run log of n finished runs for server.New to recover:
// the fastest way to a server with many runs. The lines are the run log's
// (server/store.go); the test checks through the API that every run is
// there, so a change of that format fails here rather than passing
// vacuously.
func seedRuns(t *testing.T, dir string, n int) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	t0 := time.Now().Add(-time.Duration(n) * time.Second).UTC()
	reasons := []gen.ExitReason{gen.ExitReasonFinished, gen.ExitReasonMaxStepsExceeded, gen.ExitReasonCancelled}
	for i := range n {
		id := agent.NewRunID()
		created := t0.Add(time.Duration(i) * time.Second)
		started := created.Add(10 * time.Millisecond)
		if err := enc.Encode(map[string]any{"op": "created", "id": id, "time": created, "task": "seeded", "max_steps": 5}); err != nil {
			t.Fatal(err)
		}
		res := gen.RunResult{RunId: &id, ExitReason: reasons[i%len(reasons)], StepsUsed: i % 7}
		if err := enc.Encode(map[string]any{"op": "finished", "id": id, "time": started.Add(time.Duration(i%900) * time.Millisecond), "started_at": started, "result": res}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// perfEnv turns the timed checks on: with it unset they skip, saying so.
// .ci/run sets it in a step of its own and shows their figures.
const perfEnv = "SPECLOOP_PERF"

// requirePerf skips a test that measures timings unless $SPECLOOP_PERF is
// 1: on a shared machine a figure decides nothing, so it is shown (in
// .ci/run's step), never judged by a plain go test.
func requirePerf(t *testing.T) {
	t.Helper()
	if os.Getenv(perfEnv) != "1" {
		t.Skip(perfEnv + " is not 1: this test measures timings, shown by .ci/run's timed step; run it with " +
			perfEnv + "=1 go test ./webui -run TestBrowserPerformance -v")
	}
}

// firstPageBudget is the budget of the list's first page of 10,000 runs,
// from navigation start to rendered rows, on a quiet machine.
const firstPageBudget = 1000 // ms

// TestBrowserPerformance measures the budgets on a server without a token
// (the page must work without one): the list of 10,000 runs (first page
// rendered, and every page walked), and a live run of 1,000 steps while
// the page follows it (the longest stall of the page's main thread). It
// runs only with SPECLOOP_PERF=1. The figures are logged, and a figure
// over its budget is marked, not failed: the budget is for a quiet machine
// and the tests share a small one. What fails it is what the page shows
// (the rows, the pages, the steps), whatever the time.
func TestBrowserPerformance(t *testing.T) {
	requirePerf(t)
	const runs = 10000
	data := t.TempDir()
	seedRuns(t, data, runs)
	p := &pacer{gate: make(chan struct{})}
	srv := startServer(t, server.Config{Config: runner.Config{DataDir: data, Models: p.models}})
	ctx := context.Background()
	n := 0
	for _, err := range srv.sdk.ListRuns(ctx, sdk.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != runs {
		t.Fatalf("the server recovered %d runs from the seeded log, want %d", n, runs)
	}
	b := newBrowser(t)
	shots := artifacts(t)

	// The first page of 10,000 runs, from navigation to rendered rows.
	b.do(t, "open the list", chromedp.Navigate(srv.url+"/ui/"))
	b.waitJS(t, "the first page", `performance.getEntriesByName('specloop:list-rendered').length >= 1`)
	first := eval[float64](t, b, `performance.getEntriesByName('specloop:list-rendered')[0].startTime`)
	shown := eval[int](t, b, rowsJS("runs-body"))
	if eval[bool](t, b, `document.getElementById('token-dialog').open || sessionStorage.length > 0`) {
		t.Error("a server without a token got the page to ask for one")
	}
	t.Logf("list of %d runs: first page (%d rows) rendered %.0f ms after navigation start (budget %d ms)%s",
		runs, shown, first, firstPageBudget, overBudget(first > firstPageBudget))
	if shown != 100 {
		t.Errorf("the first page shows %d runs, want 100", shown)
	}
	b.screenshot(t, shots, "list-10000")

	// Walk every page to the oldest: each "Older" click to rendered rows.
	type walkFigures struct {
		Pages int     `json:"pages"`
		Max   float64 `json:"max"`
		Total float64 `json:"total"`
		Label string  `json:"label"`
	}
	walk := eval[walkFigures](t, b, `(async () => {
		const next = document.getElementById('page-next');
		let pages = 1, max = 0, total = 0;
		while (!next.disabled) {
			const before = performance.getEntriesByName('specloop:list-rendered').length;
			const t0 = performance.now();
			next.click();
			while (performance.getEntriesByName('specloop:list-rendered').length === before) await new Promise(r => setTimeout(r, 1));
			const dt = performance.now() - t0;
			max = Math.max(max, dt); total += dt; pages++;
		}
		return {pages, max, total, label: document.getElementById('page-label').textContent};
	})()`)
	t.Logf("walked %d pages of 100 runs: %.0f ms in all, slowest page %.0f ms; last page %q", walk.Pages, walk.Total, walk.Max, walk.Label)
	if walk.Pages != runs/100 || walk.Label != "runs 9901–10000" {
		t.Errorf("the walk saw %d pages ending with %q, want 100 pages ending with runs 9901–10000", walk.Pages, walk.Label)
	}

	// A live run of 1,000 steps (3 ms a model call), followed by the page
	// from its start. In the page, a 10 ms timer measures the longest
	// stall of the main thread and a PerformanceObserver the long tasks.
	const steps = 1000
	responses := make([]string, 0, steps+1)
	for i := range steps {
		responses = append(responses, fmt.Sprintf(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":%d,"operation":"add","right":1}}`, i))
	}
	responses = append(responses, `{"type":"finish","answer":"counted"}`)
	maxSteps := steps + 1
	long, err := srv.sdk.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "[pace] count"}, Model: sdk.Script(responses...), MaxSteps: &maxSteps})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b.do(t, "open the long run", chromedp.Navigate(srv.url+"/ui/#/runs/"+long.Id))
	eval[bool](t, b, `(() => {
		window.probe = {stall: 0, long: 0, longTasks: 0, ticks: 0};
		let last = performance.now();
		window.probeTimer = setInterval(() => {
			const now = performance.now();
			probe.stall = Math.max(probe.stall, now - last - 10);
			probe.ticks++;
			last = now;
		}, 10);
		new PerformanceObserver((list) => {
			for (const e of list.getEntries()) { probe.long = Math.max(probe.long, e.duration); probe.longTasks++; }
		}).observe({type: 'longtask'});
		return true;
	})()`)
	b.waitJS(t, "the long run in flight on the page", rowsJS("steps-body")+` > 0`)
	liveRows := eval[int](t, b, rowsJS("steps-body"))
	b.waitJS(t, "the long run's end", `document.body.dataset.runState === 'finished' && `+rowsJS("steps-body")+` === `+fmt.Sprint(steps+1))
	elapsed := time.Since(t0)
	type probeFigures struct {
		Stall     float64 `json:"stall"`
		Long      float64 `json:"long"`
		LongTasks int     `json:"longTasks"`
		Ticks     int     `json:"ticks"`
	}
	probe := eval[probeFigures](t, b, `(() => { clearInterval(probeTimer); return probe; })()`)
	r, err := srv.sdk.GetRun(ctx, long.Id)
	if err != nil || r.Result == nil || r.Result.StepsUsed != steps+1 {
		t.Fatalf("the long run: %+v, %v", r, err)
	}
	t.Logf("live run of %d steps: followed to its end in %v (page showed %d rows when first seen); longest main-thread stall %.0f ms, %d long tasks (longest %.0f ms), %d timer ticks",
		steps+1, elapsed.Round(time.Millisecond), liveRows, probe.Stall, probe.LongTasks, probe.Long, probe.Ticks)
	if liveRows > steps {
		// How soon the page opened is the machine's, not the page's: the
		// figures above measured a finished run, not a live one.
		t.Logf("NOTE: the page first showed %d rows: the run was over before the page followed it live", liveRows)
	}
	b.screenshot(t, shots, "run-1000-steps")
	b.checkClean(t, srv.url, "")
}

// overBudget marks a logged figure over its budget.
func overBudget(over bool) string {
	if over {
		return " OVER BUDGET"
	}
	return ""
}

// TestBrowserApprovals: a run whose policy makes its writes wait shows
// the waiting call with its arguments and the three buttons, only while
// it waits; Approve lets it write (its patch appears), Deny with a reason
// answers the model with a denied error (an error row) and writes nothing.
// The form offers the spec's policies, and shows only the provider's own
// fields.
func TestBrowserApprovals(t *testing.T) {
	p := &pacer{gate: make(chan struct{})}
	srv := startServer(t, server.Config{Config: runner.Config{Models: p.models}})
	b := newBrowser(t)
	shots := artifacts(t)
	ctx := b.ctx
	write := `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"notes.txt","content":"one\ntwo\n"}}`
	finish := `{"type":"finish","answer":"done"}`

	b.do(t, "open the form", chromedp.Navigate(srv.url+"/ui/#/new"), chromedp.WaitVisible(chromedp.ID("f-task")))
	policies := eval[[]string](t, b, `[...document.getElementById('f-approval-policy').options].map(o => o.value)`)
	if want := []string{"", string(gen.ApprovalPolicyNever), string(gen.ApprovalPolicyCommands), string(gen.ApprovalPolicyWrites), string(gen.ApprovalPolicyAlways)}; strings.Join(policies, ",") != strings.Join(want, ",") {
		t.Errorf("the policy choices are %q, want %q", policies, want)
	}
	// Another provider: its fields replace the script's.
	eval[bool](t, b, `(() => { const s = document.getElementById('f-provider'); s.value = 'openai'; return s.dispatchEvent(new Event('change')); })()`)
	if v := eval[string](t, b, `[document.getElementById('f-responses').checkVisibility(), document.getElementById('f-model').checkVisibility()].join()`); v != "false,true" {
		t.Errorf("with provider openai, the responses and model name fields are visible: %s, want false,true", v)
	}
	eval[bool](t, b, `(() => { const s = document.getElementById('f-provider'); s.value = 'script'; return s.dispatchEvent(new Event('change')); })()`)
	eval[bool](t, b, `(() => { const s = document.getElementById('f-approval-policy'); s.value = 'writes'; return s.dispatchEvent(new Event('change')); })()`)
	b.do(t, "start a run whose writes wait",
		chromedp.SendKeys(chromedp.ID("f-task"), "write the notes, with approval"),
		chromedp.SetValue(chromedp.ID("f-responses"), write+"\n"+finish),
		chromedp.Click(chromedp.ID("f-submit")),
	)
	// Once run_started is shown (Tools) the layout holds still for clicks.
	waiting := `!document.getElementById('approvals').hidden && document.querySelectorAll('#approval-list li').length === 1 && document.getElementById('run-meta').textContent.includes('waiting_for_approval') && document.getElementById('run-meta').textContent.includes('Tools')`
	b.waitJS(t, "the call waiting for approval", waiting)
	args := eval[string](t, b, `document.querySelector('#approval-list pre').textContent`)
	if !strings.Contains(args, `"path": "notes.txt"`) || !strings.Contains(args, `"content": "one\ntwo\n"`) {
		t.Errorf("the waiting call's arguments read %q", args)
	}
	if got := eval[string](t, b, `[...document.querySelectorAll('#approval-list button')].map(b => b.dataset.decision).join()`); got != "approve,approve_for_run,deny" {
		t.Errorf("the approval buttons are %q", got)
	}
	b.screenshot(t, shots, "run-approval")
	b.do(t, "approve", chromedp.Click(chromedp.CSS(`#approval-list button[data-decision="approve"]`)))
	b.waitJS(t, "the approved run's end", `document.body.dataset.runState === 'finished' && document.getElementById('approvals').hidden`)
	if got := eval[string](t, b, `document.getElementById('steps-body').textContent + ' | ' + [...document.querySelectorAll('#patch .add')].map(s => s.textContent).join()`); !strings.Contains(got, "write_file approve") || !strings.Contains(got, "write_file ok") || !strings.HasSuffix(got, "+one,+two") {
		t.Errorf("after approval the page reads %q", got)
	}

	policy := gen.ApprovalPolicyWrites
	denied, err := srv.sdk.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "write, to be denied"}, Model: sdk.Script(write, finish), ApprovalPolicy: &policy})
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, "open the run to deny", chromedp.Navigate(srv.url+"/ui/#/runs/"+denied.Id))
	b.waitJS(t, "the call waiting for approval", waiting)
	// The reason is typed while the page still reads the run (the
	// approval_requested event makes it read the waiting calls again):
	// the field must keep its focus and text.
	b.do(t, "type a reason", chromedp.SendKeys(chromedp.CSS("#approval-list input"), "not this file"))
	b.do(t, "deny", chromedp.Click(chromedp.CSS(`#approval-list button[data-decision="deny"]`)))
	b.waitJS(t, "the denied run's end", `document.body.dataset.runState === 'finished'`)
	checkDenied := func(when string) {
		t.Helper()
		got := eval[string](t, b, `[...document.querySelectorAll('#steps-body tr.error')].map(r => r.textContent).join('|') + ' | patch ' + !document.getElementById('patch-section').hidden + ' | approvals ' + !document.getElementById('approvals').hidden`)
		// The reason reached the server: the trace has its summary.
		if !strings.Contains(got, fmt.Sprintf("write_file deny %d chars", len("not this file"))) || !strings.Contains(got, "write_file "+string(gen.ErrorCodeDenied)) || !strings.HasSuffix(got, "patch false | approvals false") {
			t.Errorf("%s: the denied run's page reads %q", when, got)
		}
	}
	checkDenied("live")
	b.screenshot(t, shots, "run-denied")
	b.do(t, "reload the denied run", chromedp.Reload())
	b.waitJS(t, "the denied run after reload", `document.body.dataset.runState === 'finished' && document.getElementById('stream-state').textContent === 'ended'`)
	checkDenied("after reload")
	b.checkClean(t, srv.url, "")
}

// firstEventOnly is a ResponseWriter that lets the first event of a
// stream through and drops the rest: the stream ends cleanly after one
// event, as when a proxy closes a long response.
type firstEventOnly struct {
	http.ResponseWriter
	buf  []byte
	done bool
}

func (c *firstEventOnly) Write(p []byte) (int, error) {
	if c.done {
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	if i := bytes.Index(c.buf, []byte("\n\n")); i >= 0 {
		c.done = true
		if _, err := c.ResponseWriter.Write(c.buf[:i+2]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *firstEventOnly) Flush() { http.NewResponseController(c.ResponseWriter).Flush() }

// TestBrowserResume: when the event stream ends after its first event,
// before run_finished, the page reconnects with Last-Event-ID and shows
// every step once.
func TestBrowserResume(t *testing.T) {
	srv := startServer(t, server.Config{})
	run, err := srv.sdk.CreateRun(context.Background(), gen.CreateRunRequest{Task: gen.Task{Prompt: "add twice"}, Model: sdk.Script(
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":2}}`,
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":3,"operation":"add","right":4}}`,
		`{"type":"finish","answer":"7"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.sdk.Wait(context.Background(), run.Id); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	var mu sync.Mutex
	var lastIDs []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			first := len(lastIDs) == 1
			mu.Unlock()
			if first {
				w = &firstEventOnly{ResponseWriter: w}
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	b := newBrowser(t)
	b.do(t, "open the run", chromedp.Navigate(front.URL+"/ui/#/runs/"+run.Id))
	b.waitJS(t, "the run, after a reconnection", `document.body.dataset.runState === 'finished' && document.getElementById('stream-state').textContent === 'ended'`)
	got := eval[string](t, b, `[...document.querySelectorAll('#steps-body tr')].map(r => r.dataset.step + ':' + r.querySelectorAll('td:nth-child(3) strong').length).join()`)
	if got != "1:1,2:1,3:0" {
		t.Errorf("the steps after the reconnection are %q, want each once: 1:1,2:1,3:0", got)
	}
	// The transcript, which the first stream had none of, is whole, each
	// entry once: run_started, 3 actions, 2 observations, run_finished.
	if seqs := eval[string](t, b, `[...document.querySelectorAll('#transcript li')].map(li => li.dataset.seq).join()`); seqs != "1,2,3,4,5,6,7" {
		t.Errorf("the transcript entries after the reconnection are %q, want 1 to 7 once", seqs)
	}
	mu.Lock()
	defer mu.Unlock()
	// The page asks for content: the ids are "P:S", and the first event
	// (run_started) is position 1 before any transcript entry.
	if len(lastIDs) != 2 || lastIDs[0] != "" || lastIDs[1] != "1:0" {
		t.Errorf("the event stream was asked for with Last-Event-ID %q, want \"\" then \"1:0\"", lastIDs)
	}
	b.checkClean(t, front.URL, "")
}

// TestBrowserHiddenCharacters: what the model wrote reaches the page with
// its invisible characters marked, not working: a bidi override in a file
// name of a call waiting for approval (notes\u202etxt.exe would read
// notes"exe.txt), a zero-width space, a C1 control and an escape in the
// answer, a bidi isolate in the patch. And a call whose id the model made
// `..` — which a browser resolves as a dot segment of the decision's URL —
// is still decided from the page (the loop gives it an approval id).
func TestBrowserHiddenCharacters(t *testing.T) {
	srv := startServer(t, server.Config{})
	b := newBrowser(t)
	shots := artifacts(t)
	ctx := b.ctx
	call := func(id, path, content string) string {
		j, err := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "write_file", "call_id": id,
			"arguments": map[string]any{"path": path, "content": content}})
		if err != nil {
			t.Fatal(err)
		}
		return string(j)
	}
	answer := "done\u200b \u0085 \x1b[2K"
	finish, err := json.Marshal(map[string]any{"type": "finish", "answer": answer})
	if err != nil {
		t.Fatal(err)
	}
	policy := gen.ApprovalPolicyWrites
	run, err := srv.sdk.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "write with odd names"},
		Model: sdk.Script(call("..", "notes\u202etxt.exe", "x\n"), call("a/b", "plain.txt", "rm -rf ~ #\u2066 harmless\n"), string(finish)), ApprovalPolicy: &policy})
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, "open the run", chromedp.Navigate(srv.url+"/ui/#/runs/"+run.Id))
	waiting := `!document.getElementById('approvals').hidden && document.querySelectorAll('#approval-list li').length === 1 && document.getElementById('run-meta').textContent.includes('Tools')`
	b.waitJS(t, "the first call waiting for approval", waiting)
	type view struct {
		Text    string   `json:"text"`
		Markers []string `json:"markers"`
	}
	got := eval[view](t, b, `(() => { const li = document.querySelector('#approval-list li');
		return {text: li.textContent, markers: [...li.querySelectorAll('.hidden-char')].map(s => s.textContent)}; })()`)
	if strings.ContainsRune(got.Text, '\u202e') || !strings.Contains(got.Text, `"path": "notes<U+202E>txt.exe"`) || !slices.Contains(got.Markers, "<U+202E>") {
		t.Errorf("the waiting call reads %q, marked %q: want the override shown as <U+202E>, marked", got.Text, got.Markers)
	}
	b.screenshot(t, shots, "approval-hidden-chars")
	first := eval[string](t, b, `document.querySelector('#approval-list li').dataset.call`)
	b.do(t, "approve the first call", chromedp.Click(chromedp.CSS(`#approval-list button[data-decision="approve"]`)))
	b.waitJS(t, "the second call waiting for approval", waiting+` && document.querySelector('#approval-list li').dataset.call !== `+jsString(t, first))
	b.do(t, "approve the second call", chromedp.Click(chromedp.CSS(`#approval-list button[data-decision="approve"]`)))
	b.waitJS(t, "the run's end", `document.body.dataset.runState === 'finished'`)
	r, err := srv.sdk.GetRun(ctx, run.Id)
	if err != nil || r.Result == nil || r.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("the run: %+v, %v", r, err)
	}
	got = eval[view](t, b, `(() => { const a = document.getElementById('answer');
		return {text: a.textContent, markers: [...a.querySelectorAll('.hidden-char')].map(s => s.textContent)}; })()`)
	if want := "done<U+200B> <U+0085> <U+001B>[2K"; got.Text != want || !slices.Equal(got.Markers, []string{"<U+200B>", "<U+0085>", "<U+001B>"}) {
		t.Errorf("the answer reads %q, marked %q; want %q", got.Text, got.Markers, want)
	}
	if added := eval[[]string](t, b, `[...document.querySelectorAll('#patch .add')].map(s => s.textContent)`); !slices.Contains(added, "+rm -rf ~ #<U+2066> harmless") {
		t.Errorf("the patch's added lines read %q, want the isolate marked", added)
	}
	if steps := eval[string](t, b, `document.getElementById('steps-body').textContent`); strings.Count(steps, "write_file approve") != 2 {
		t.Errorf("the steps read %q: want both calls approved", steps)
	}
	b.checkClean(t, srv.url, "")
}

// TestBrowserReveal: the page's rule for what it marks, in its own code:
// controls but newline and tab, format characters (bidi, zero-width,
// BOM, tags), line and paragraph separators.
func TestBrowserReveal(t *testing.T) {
	srv := startServer(t, server.Config{})
	b := newBrowser(t)
	b.do(t, "open the page", chromedp.Navigate(srv.url+"/ui/"))
	b.waitJS(t, "the page", `document.body.dataset.ready === 'true'`)
	for in, want := range map[string]string{
		"plain text, é and 日本":              "plain text, é and 日本",
		"a\nb\tc":                           "a\nb\tc",
		"notes\u202etxt.exe":                "notes<U+202E>txt.exe",
		"\u202a\u202b\u202c\u202d":          "<U+202A><U+202B><U+202C><U+202D>",
		"\u2066x\u2067y\u2068z\u2069":       "<U+2066>x<U+2067>y<U+2068>z<U+2069>",
		"\u200e\u200f\u061c":                "<U+200E><U+200F><U+061C>",
		"zero\u200b\u200c\u200dwidth\ufeff": "zero<U+200B><U+200C><U+200D>width<U+FEFF>",
		"\x00\x07\r\x1b\x7f":                "<U+0000><U+0007><U+000D><U+001B><U+007F>",
		"\u0085\u009b":                      "<U+0085><U+009B>",
		"line\u2028para\u2029":              "line<U+2028>para<U+2029>",
		"tag\U000E0041":                     "tag<U+E0041>",
		"soft\u00adhyphen":                  "soft<U+00AD>hyphen",
	} {
		got := eval[string](t, b, `import('./util.js').then(m => m.reveal(`+jsString(t, in)+`))`)
		if got != want {
			t.Errorf("reveal(%q) = %q, want %q", in, got, want)
		}
		marked := eval[string](t, b, `import('./util.js').then(m => { const p = document.createElement('p'); p.append(m.visible(`+jsString(t, in)+`)); return p.textContent; })`)
		if marked != want {
			t.Errorf("visible(%q) reads %q, want %q", in, marked, want)
		}
	}
	b.checkClean(t, srv.url, "")
}

// jsString is s as a JavaScript string literal.
func jsString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sayingModel is a script model that writes text beside its actions, as
// a real model does: the text of each turn is its prompt's "say" line.
type sayingModel struct {
	inner agent.Model
	say   string
}

func (m *sayingModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	turn, err := m.inner.Next(ctx, req)
	if err == nil && len(turn.Actions) > 0 {
		text := m.say
		if a := turn.Actions[0]; a.ToolCall != nil {
			a.ToolCall.Text = &text
		} else if a.Finish != nil {
			a.Finish.Text = &text
		}
	}
	return turn, err
}

// TestBrowserTranscript: the run view shows what the run did from the
// event stream's content: the task, the model's text, the command it ran
// and the command's output, a call's error, a file's text; all as text (a
// workspace file holding <script> shows as text and runs nothing), live
// and after a reload. The runs list shows the task's first line.
func TestBrowserTranscript(t *testing.T) {
	say := "I will run the command <b>first</b>."
	srv := startServer(t, server.Config{Config: runner.Config{AllowCommands: true, Models: func(cfg gen.ModelConfig) (agent.Model, error) {
		m, err := runner.DefaultModels(cfg)
		return &sayingModel{inner: m, say: say}, err
	}}})
	page := `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`
	if err := os.WriteFile(filepath.Join(srv.ws, "page.html"), []byte(page+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, args map[string]any) string {
		j, err := json.Marshal(map[string]any{"type": "tool_call", "tool_name": tool, "arguments": args})
		if err != nil {
			t.Fatal(err)
		}
		return string(j)
	}
	command := "echo hello-from-the-command; echo to-stderr >&2"
	run, err := srv.sdk.CreateRun(context.Background(), gen.CreateRunRequest{
		Task: gen.Task{Prompt: "Run the greeting command\nand read the page."},
		Model: sdk.Script(call("run_command", map[string]any{"command": command}),
			call("read_file", map[string]any{"path": "page.html"}),
			call("read_file", map[string]any{"path": "missing.txt"}),
			`{"type":"finish","answer":"done"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	shots := artifacts(t)
	b.do(t, "open the run", chromedp.Navigate(srv.url+"/ui/#/runs/"+run.Id))
	type view struct {
		Entries  int      `json:"entries"`
		Text     string   `json:"text"`
		Args     []string `json:"args"`
		Outputs  []string `json:"outputs"`
		Errors   []string `json:"errors"`
		Model    []string `json:"model"`
		Task     string   `json:"task"`
		MetaTask string   `json:"metaTask"`
		Elements int      `json:"elements"`
		Pwned    bool     `json:"pwned"`
	}
	check := func(when string) {
		t.Helper()
		b.waitJS(t, "the run's transcript, "+when, `document.body.dataset.runState === 'finished' && document.getElementById('stream-state').textContent === 'ended' && document.querySelector('#transcript li[data-kind="run_finished"]')`)
		got := eval[view](t, b, `(() => { const tr = document.getElementById('transcript');
			const texts = (sel) => [...tr.querySelectorAll(sel)].map(e => e.textContent);
			return {entries: tr.children.length, text: tr.textContent, args: texts('pre.arg'), outputs: texts('pre.output'),
				errors: texts('pre.error'), model: texts('pre.model-text'), task: texts('pre.task').join(),
				metaTask: [...document.querySelectorAll('#run-meta dt')].find(d => d.textContent === 'Task').nextElementSibling.textContent,
				elements: tr.querySelectorAll('script, img, b').length, pwned: window.pwned !== undefined}; })()`)
		if !slices.Contains(got.Args, command) {
			t.Errorf("%s: the arguments shown are %q, want the command %q", when, got.Args, command)
		}
		if !slices.ContainsFunc(got.Outputs, func(o string) bool {
			return strings.Contains(o, "hello-from-the-command") && strings.Contains(o, "to-stderr")
		}) {
			t.Errorf("%s: the outputs shown are %q, want the command's stdout and stderr", when, got.Outputs)
		}
		if !slices.ContainsFunc(got.Outputs, func(o string) bool { return strings.Contains(o, page) }) || got.Elements != 0 || got.Pwned {
			t.Errorf("%s: the file's text must show as text: outputs %q, %d elements made of it, script ran: %v", when, got.Outputs, got.Elements, got.Pwned)
		}
		if len(got.Errors) != 1 || !strings.Contains(got.Text, "read_file failed: "+string(gen.ErrorCodeNotFound)) {
			t.Errorf("%s: the failed call shows errors %q in %q", when, got.Errors, clip(got.Text))
		}
		if len(got.Model) != 4 || got.Model[0] != say {
			t.Errorf("%s: the model's text shows as %q, want %q on each of its 4 turns", when, got.Model, say)
		}
		if got.Task != "Run the greeting command\nand read the page." || got.MetaTask != "Run the greeting command" {
			t.Errorf("%s: the task shows as %q, in the run's details %q", when, got.Task, got.MetaTask)
		}
		// run_started, 4 actions, 3 observations, run_finished.
		if got.Entries != 9 {
			t.Errorf("%s: %d transcript entries shown, want 9", when, got.Entries)
		}
	}
	check("live")
	b.screenshot(t, shots, "run-transcript")
	b.do(t, "reload the run", chromedp.Reload())
	check("after reload")

	b.do(t, "open the list", chromedp.Navigate(srv.url+"/ui/#/"))
	b.waitJS(t, "the run listed", rowsJS("runs-body")+` === 1`)
	if task := eval[string](t, b, `document.querySelector('#runs-body td[data-label="Task"]').textContent`); task != "Run the greeting command" {
		t.Errorf("the list shows the task as %q, want its first line", task)
	}
	b.checkClean(t, srv.url, "")
}

// TestBrowserReply: a run that ended offers a reply box; a follow-up typed
// there (Ctrl+Enter) starts the conversation's next run, whose view follows
// it live (no box while it runs) to the follow-up's answer, its transcript
// starting with the message, and links back to the run it continues; an
// empty reply shows the server's 400; the first run then links to its
// follow-up, and a second reply to it shows the server's refusal (409)
// next to the box, as text, keeping the message.
func TestBrowserReply(t *testing.T) {
	// A conversation's runs share one model: the script goes on where the
	// conversation is (each run's model is built from the same config).
	p := &pacer{gate: make(chan struct{})}
	var mu sync.Mutex
	models := map[string]agent.Model{}
	srv := startServer(t, server.Config{Config: runner.Config{Models: func(cfg gen.ModelConfig) (agent.Model, error) {
		key, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if m, ok := models[string(key)]; ok {
			return m, nil
		}
		m, err := p.models(cfg)
		if err == nil {
			models[string(key)] = m
		}
		return m, err
	}}})
	first, err := srv.sdk.CreateRun(context.Background(), gen.CreateRunRequest{
		Task:  gen.Task{Prompt: "[gate] say hello"},
		Model: sdk.Script(`{"type":"finish","answer":"hello"}`, `{"type":"finish","answer":"a test, added"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	shots := artifacts(t)
	ended := `document.body.dataset.runState === 'finished' && document.getElementById('stream-state').textContent === 'ended'`
	meta := func(term string) string {
		return fmt.Sprintf(`([...document.querySelectorAll('#run-meta dt')].find(d => d.textContent === %q)?.nextElementSibling.querySelector('a')?.getAttribute('href') || '')`, term)
	}
	b.do(t, "open the first run", chromedp.Navigate(srv.url+"/ui/#/runs/"+first.Id))
	b.waitJS(t, "the first run's end and its reply box", ended+` && !document.getElementById('reply-section').hidden`)
	if got := eval[string](t, b, meta("Continues")+` + '|' + `+meta("Continued by")); got != "|" {
		t.Errorf("a run alone in its conversation links to %q", got)
	}
	message := "Now add a test <b>for it</b>."
	b.do(t, "type a follow-up and press Ctrl+Enter",
		chromedp.SendKeys(chromedp.ID("reply-message"), message),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	// The follow-up's model call waits for the gate: the new run's view is
	// live, without a reply box.
	b.waitJS(t, "the follow-up's view, running", fmt.Sprintf(`location.hash !== '#/runs/%s' && document.getElementById('run-meta').textContent.includes('running') && document.querySelector('#transcript li[data-kind="run_started"]')`, first.Id))
	if got := eval[string](t, b, `document.getElementById('reply-section').hidden + '|' + `+meta("Continues")+` + '|' + document.querySelector('#transcript pre.task').textContent`); got != fmt.Sprintf("true|#/runs/%s|%s", first.Id, message) {
		t.Errorf("the running follow-up reads %q: want no reply box, a link to the first run and the message as its task", got)
	}
	b.screenshot(t, shots, "run-follow-up-running")
	close(p.gate)
	b.waitJS(t, "the follow-up's end", ended+` && !document.getElementById('reply-section').hidden`)
	type view struct {
		Answer    string `json:"answer"`
		First     string `json:"first"`
		Task      string `json:"task"`
		Continues string `json:"continues"`
		Conv      string `json:"conv"`
		Elements  int    `json:"elements"`
	}
	got := eval[view](t, b, `({answer: document.getElementById('answer').textContent,
		first: document.querySelector('#transcript li').dataset.kind + ' ' + document.querySelector('#transcript li strong').textContent + ': ' + document.querySelector('#transcript li pre.task').textContent,
		task: [...document.querySelectorAll('#run-meta dt')].find(d => d.textContent === 'Message')?.nextElementSibling.textContent,
		continues: `+meta("Continues")+`, conv: `+meta("Conversation")+`, elements: document.querySelectorAll('#transcript b').length})`)
	if want := (view{Answer: "a test, added", First: "run_started Follow-up: " + message, Task: message, Continues: "#/runs/" + first.Id, Conv: "#/runs/" + first.Id}); got != want {
		t.Errorf("the finished follow-up reads %+v, want %+v", got, want)
	}
	next := strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/runs/")
	b.screenshot(t, shots, "run-follow-up")
	// An empty message: the server's 400, next to the box, and the view stays.
	b.do(t, "send an empty reply", chromedp.Click(chromedp.ID("reply-send")))
	b.waitJS(t, "the empty reply refused", `!document.getElementById('reply-msg').hidden`)
	if got := eval[string](t, b, `document.getElementById('reply-msg').textContent + '|' + location.hash`); !strings.Contains(got, "message") || !strings.HasSuffix(got, "|#/runs/"+next) {
		t.Errorf("an empty reply reads %q, want the server's detail about the message, on the follow-up's view", got)
	}

	b.do(t, "back to the first run", chromedp.Click(chromedp.CSS(`#run-meta a[href="#/runs/`+first.Id+`"]`)))
	b.waitJS(t, "the first run linking to its follow-up", ended+` && `+meta("Continued by")+` === '#/runs/`+next+`'`)
	again := "And <i>another</i>."
	b.do(t, "reply to it again", chromedp.SendKeys(chromedp.ID("reply-message"), again), chromedp.Click(chromedp.ID("reply-send")))
	b.waitJS(t, "the refusal", `!document.getElementById('reply-msg').hidden`)
	refusal := eval[string](t, b, `document.getElementById('reply-msg').textContent + '|' + document.getElementById('reply-message').value + '|' + document.querySelectorAll('#reply-msg *').length + '|' + location.hash`)
	if want := fmt.Sprintf("run %s continues this run already; continue the conversation's last run|%s|0|#/runs/%s", next, again, first.Id); refusal != want {
		t.Errorf("the second reply reads %q, want %q", refusal, want)
	}
	b.screenshot(t, shots, "run-reply-refused")
	b.checkClean(t, srv.url, "", "409", "400")
}

// streamingModel streams its text before each turn of the inner model,
// then waits for gate: the test sees the text while the step is in flight.
type streamingModel struct {
	inner agent.Model
	text  []string
	gate  chan struct{}
}

func (m *streamingModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	for _, piece := range m.text {
		req.OnText(piece)
	}
	select {
	case <-m.gate:
	case <-ctx.Done():
		return agent.Turn{}, ctx.Err()
	}
	return m.inner.Next(ctx, req)
}

// TestBrowserLiveText: the run view shows the model's text as it streams
// in (the stream's delta events), as text, while the step is in flight,
// and drops it once the step's turn arrives (its transcript entry holds
// the text whole).
func TestBrowserLiveText(t *testing.T) {
	gate := make(chan struct{})
	srv := startServer(t, server.Config{Config: runner.Config{Models: func(cfg gen.ModelConfig) (agent.Model, error) {
		m, err := runner.DefaultModels(cfg)
		return &streamingModel{inner: m, text: []string{"I suspect ", "the <b>comparison</b>"}, gate: gate}, err
	}}})
	run, err := srv.sdk.CreateRun(context.Background(), gen.CreateRunRequest{
		Task:  gen.Task{Prompt: "Think aloud."},
		Model: sdk.Script(`{"type":"finish","answer":"done"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, "open the run", chromedp.Navigate(srv.url+"/ui/#/runs/"+run.Id))
	b.waitJS(t, "the streamed text", `(() => { const e = document.getElementById('live-text'); return !e.hidden && e.textContent === 'step 1, the model is writing: I suspect the <b>comparison</b>'; })()`)
	if n := eval[int](t, b, `document.querySelectorAll('#live-text b').length`); n != 0 {
		t.Errorf("the streamed text made %d elements", n)
	}
	close(gate)
	b.waitJS(t, "the run's end, the streamed text gone", `document.body.dataset.runState === 'finished' && document.getElementById('live-text').hidden`)
	b.checkClean(t, srv.url, "")
}
