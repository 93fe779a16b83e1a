package webui_test

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/webui"
)

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// TestHandlerHeaders: every answer, the page's and an error's, carries the
// CSP that keeps the page on its own origin, and the handler serves reads
// only.
func TestHandlerHeaders(t *testing.T) {
	h := webui.Handler()
	for _, target := range []string{"/", "/app.js", "/style.css", "/spec.json", "/missing.js"} {
		rec := get(t, h, http.MethodGet, target)
		if got := rec.Header().Get("Content-Security-Policy"); got != webui.CSP {
			t.Errorf("GET %s: CSP %q", target, got)
		}
		if !strings.Contains(webui.CSP, "default-src 'self'") || strings.Contains(webui.CSP, "unsafe") || strings.Contains(webui.CSP, "http") {
			t.Errorf("the CSP allows more than the server's origin: %s", webui.CSP)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", target)
		}
		want := http.StatusOK
		if target == "/missing.js" {
			want = http.StatusNotFound
		}
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d", target, rec.Code, want)
		}
	}
	if rec := get(t, h, http.MethodGet, "/"); !strings.Contains(rec.Body.String(), `<script type="module" src="app.js">`) {
		t.Errorf("GET / is not the page: %.200s", rec.Body.String())
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if rec := get(t, h, m, "/"); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /: %d, Allow %q", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

// TestSpecJSON: the page's enums are the spec's, as generated.
func TestSpecJSON(t *testing.T) {
	rec := get(t, webui.Handler(), http.MethodGet, webui.SpecPath)
	var s webui.Spec
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("spec.json: %v", err)
	}
	if want := []string{string(gen.RunStatusQueued), string(gen.RunStatusRunning), string(gen.RunStatusFinished)}; !slices.Equal(slices.DeleteFunc(slices.Clone(s.Enums["RunStatus"]), func(v string) bool { return !slices.Contains(want, v) }), want) {
		t.Errorf("RunStatus %v, want %v among them in order", s.Enums["RunStatus"], want)
	}
	if !slices.Contains(s.Enums["ExitReason"], string(gen.ExitReasonInterrupted)) || !slices.Contains(s.Enums["TraceEventType"], string(gen.TraceEventTypeFinishRejected)) {
		t.Errorf("enums %v", s.Enums)
	}
	if !slices.Equal(s.Providers, []string{string(gen.AnthropicModelConfigProviderAnthropic), string(gen.OpenAIModelConfigProviderOpenai), string(gen.ScriptModelConfigProviderScript)}) {
		t.Errorf("providers %v", s.Providers)
	}
	if s.Meanings["ErrorCode"][string(gen.ErrorCodeDivisionByZero)] == "" {
		t.Errorf("no meaning for division_by_zero: %v", s.Meanings)
	}
	if s.MaxSteps.Default != 5 || s.MaxSteps.Min != 1 || s.MaxSteps.Max < 1000 {
		t.Errorf("max_steps %+v", s.MaxSteps)
	}
}

// TestKnownValuesInSpec: every enum value the page's code depends on
// (known.js) is a value of the spec enum it stands for, so that renaming a
// status or an event type in the spec fails here, not silently in a
// browser.
func TestKnownValuesInSpec(t *testing.T) {
	s := webui.LoadSpec()
	src, err := os.ReadFile("assets/known.js")
	if err != nil {
		t.Fatal(err)
	}
	// Which spec enum each exported object (or, for Approvals, each key)
	// holds values of.
	enumOf := map[string]string{
		"RunStatus": "RunStatus", "EventType": "TraceEventType", "ActionType": "ActionType",
		"ExitReason": "ExitReason", "Provider": "providers",
		"Approvals.status": "RunStatus", "Approvals.event": "TraceEventType",
		"Approvals.decided": "TraceEventType", "Approvals.approve": "ApprovalDecision", "Approvals.approveForRun": "ApprovalDecision", "Approvals.deny": "ApprovalDecision",
	}
	objects := regexp.MustCompile(`(?s)export const (\w+) = \{(.*?)\};`).FindAllStringSubmatch(string(src), -1)
	pairs := regexp.MustCompile(`(\w+): '([^']*)'`)
	n := 0
	for _, o := range objects {
		for _, kv := range pairs.FindAllStringSubmatch(o[2], -1) {
			enum := enumOf[o[1]]
			if enum == "" {
				enum = enumOf[o[1]+"."+kv[1]]
			}
			if enum == "" {
				t.Errorf("known.js: %s.%s: no spec enum is named for it in this test", o[1], kv[1])
				continue
			}
			values := s.Enums[enum]
			if enum == "providers" {
				values = s.Providers
			}
			if !slices.Contains(values, kv[2]) {
				t.Errorf("known.js: %s.%s = %q is not a value of the spec's %s %v", o[1], kv[1], kv[2], enum, values)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("checked %d values of known.js: the test no longer reads it", n)
	}
	// The event name of the stream's transcript entries is the runner's.
	if want := "export const ContentEvent = '" + runner.ContentEvent + "';"; !strings.Contains(string(src), want) {
		t.Errorf("known.js lacks %s", want)
	}
	if want := "export const DeltaEvent = '" + runner.DeltaEvent + "';"; !strings.Contains(string(src), want) {
		t.Errorf("known.js lacks %s", want)
	}
}

// TestAssetsReferenced: every file the page loads (the HTML's src and
// href, the modules' imports) is embedded, and no reference leaves the
// server (an absolute URL would be another origin the CSP blocks).
func TestAssetsReferenced(t *testing.T) {
	h := webui.Handler()
	refs := regexp.MustCompile(`(?:src|href)="([^"#][^"]*)"|from '([^']+)'|fetch\('([^']+)'`)
	files, err := fs.Glob(os.DirFS("assets"), "*")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".html") && !strings.HasSuffix(f, ".js") {
			continue
		}
		src, err := os.ReadFile(path.Join("assets", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range refs.FindAllStringSubmatch(string(src), -1) {
			ref := m[1] + m[2] + m[3]
			if strings.Contains(ref, ":") || strings.HasPrefix(ref, "//") {
				t.Errorf("%s refers to %q, outside the server", f, ref)
				continue
			}
			if rec := get(t, h, http.MethodGet, "/"+strings.TrimPrefix(ref, "./")); rec.Code != http.StatusOK {
				t.Errorf("%s refers to %q: %d", f, ref, rec.Code)
			}
			seen++
		}
	}
	if seen < 8 {
		t.Fatalf("found %d references: the test no longer reads the assets", seen)
	}
}

// TestTextOnly: the page puts text from the server (which holds what the
// model wrote) into the DOM as text only: no HTML parsing sink appears in
// its code.
func TestTextOnly(t *testing.T) {
	sinks := []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "createContextualFragment"}
	files, err := fs.Glob(os.DirFS("assets"), "*.js")
	if err != nil || len(files) < 5 {
		t.Fatalf("assets: %v %v", files, err)
	}
	for _, f := range files {
		src, err := os.ReadFile(path.Join("assets", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sinks {
			if strings.Contains(string(src), s) {
				t.Errorf("%s uses %s", f, s)
			}
		}
	}
}
