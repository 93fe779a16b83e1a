package openai_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
	"github.com/specloop/specloop/tools"
)

// The windows budget (issue 24, docs/performance.md): a run against a
// server that enforces a small window and says its limit only in its
// error, without the window configured, finishes; after the first refusal
// no request is over the window; and the summarizer is called at most
// once per 10 steps on average. An 8k window on a 60-read run, a 16k
// window on a noisy 60-step code task.
func TestWindowLearnedFromTheRefusal(t *testing.T) {
	for _, tt := range []struct {
		name   string
		window int
		turns  []modeltest.Turn
	}{
		{"8k, 60 reads", 8192, readTrajectory(60)},
		{"16k, noisy code task", 16384, codeTaskTrajectory()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := windowRun(t, tt.window, tt.turns)
			t.Logf("%d steps: %d requests, after the first refusal the largest %d tokens of %d; %d refused; %d compactions, %d summaries; the smallest output cut %d bytes",
				f.steps, f.requests, f.largest, tt.window, f.refused, f.compactions, f.summaries, f.cap)
			if f.refused != 1 || f.overAfter != 0 {
				t.Fatalf("%d requests refused, %d over the window after the first refusal; want the first only", f.refused, f.overAfter)
			}
			if f.summaries*10 > f.steps {
				t.Fatalf("%d summaries in %d steps, more than one per 10 steps", f.summaries, f.steps)
			}
		})
	}
}

// windowFigures are what windowRun measured.
type windowFigures struct {
	steps, requests, largest, refused, overAfter, compactions, summaries, cap int
}

// windowRun runs turns against a stand-in enforcing window with a model
// told no window (a local model's name: the default window, 32,768) and
// checks that the run finished and learned the window.
func windowRun(t *testing.T, window int, turns []modeltest.Turn) windowFigures {
	srv := modeltest.Scripted(t, codec, window, turns)
	m := newModel(t, srv, func(c *openai.Config) { c.Model = "qwen2.5-coder-7b-instruct" })
	rt := &codeTools{Runtime: codeWorkspace(t)}
	var rec modeltest.Recorder
	f := windowFigures{cap: 1 << 30}
	observe := func(p agent.Progress) {
		if p.Seen != nil && p.Seen.Content != p.Observation.Content {
			f.cap = min(f.cap, len(p.Seen.Content))
		}
	}
	res, err := agent.Run(context.Background(), modeltest.Task, m, agent.Options{MaxSteps: len(turns), Tools: rt, Trace: &rec, Observer: observe})
	if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != len(turns) {
		t.Fatalf("result %s after %d steps (error %q), err %v; want finished in %d steps", res.ExitReason, res.StepsUsed, *cmp.Or(res.Error, new(string)), err, len(turns))
	}
	if res.ContextWindow == nil || *res.ContextWindow != window {
		t.Fatalf("the result's context window is %v, want %d", res.ContextWindow, window)
	}
	f.steps = res.StepsUsed
	for _, ev := range rec.Events {
		if ev.EventType == gen.TraceEventTypeHistoryCompacted {
			f.compactions++
		}
	}
	for _, body := range srv.Bodies() {
		n := modeltest.StandInTokens(body)
		f.requests++
		switch {
		case n > window && f.refused == 0:
			f.refused++
		case n > window:
			f.refused++
			f.overAfter++
		case f.refused > 0:
			f.largest = max(f.largest, n)
		}
		if bytes.Contains(body, []byte(modeltest.SummaryInstruction)) {
			f.summaries++
		}
	}
	return f
}

// codeTools is the built-in tools over a workspace of Go packages, whose
// run_command answers as a verbose test suite would (the stand-in of the
// sandboxed `go test -v ./...`): a failure until the fix is made.
type codeTools struct {
	*tools.Runtime
}

func (r *codeTools) Call(ctx context.Context, call *gen.ToolCall) (gen.Observation, error) {
	if call.ToolName != "run_command" {
		return r.Runtime.Call(ctx, call)
	}
	var out strings.Builder
	for i := range 240 {
		fmt.Fprintf(&out, "=== RUN   TestHandler%03d\n--- PASS: TestHandler%03d (0.00s)\n", i, i)
	}
	fixed := strings.Contains(readWorkspace(r.Runtime, "pkg3/file.go"), "return x + 1 // fixed")
	if !fixed {
		out.WriteString("--- FAIL: TestIncrement (0.00s)\n    file_test.go:12: Increment(1) = 1, want 2\nFAIL\nexit status 1\n")
	} else {
		out.WriteString("PASS\nok  \texample.com/code\t0.412s\n")
	}
	return gen.Observation{Type: gen.ObservationTypeObservation, ToolName: call.ToolName, Content: out.String(), IsError: !fixed}, nil
}

// readWorkspace is a file of rt's workspace, through read_file.
func readWorkspace(rt *tools.Runtime, path string) string {
	obs, _ := rt.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", Arguments: map[string]any{"path": path}})
	return obs.Content
}

// codeWorkspace is a runtime with every built-in tool over a workspace of
// six Go packages of 600 lines each.
func codeWorkspace(t *testing.T) *tools.Runtime {
	t.Helper()
	dir := t.TempDir()
	for p := range 6 {
		var b strings.Builder
		fmt.Fprintf(&b, "package pkg%d\n\nimport (\n\t\"context\"\n\t\"fmt\"\n)\n\n", p)
		b.WriteString("// Increment returns x plus one.\nfunc Increment(x int) int {\n\treturn x // the bug\n}\n\n")
		for i := 0; b.Len() < 600*34; i++ {
			fmt.Fprintf(&b, "// handle%d serves the request of kind %d.\nfunc (s *Server) handle%d(ctx context.Context, req *Request) error {\n\tif req.Kind != %d {\n\t\treturn fmt.Errorf(\"kind %%d: %%w\", req.Kind, errKind)\n\t}\n\treturn s.next(ctx, req)\n}\n\n", i, i, i, i)
		}
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("pkg%d", p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pkg%d", p), "file.go"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// readRange is a read_file of 200 lines of package p from line start.
func readRange(p, start int) modeltest.Turn {
	return modeltest.Call("read_file", map[string]any{"path": fmt.Sprintf("pkg%d/file.go", p), "start_line": float64(start), "end_line": float64(start + 199)})
}

// readTrajectory reads the packages in 200-line ranges, n reads in all,
// then finishes.
func readTrajectory(n int) []modeltest.Turn {
	turns := make([]modeltest.Turn, 0, n+1)
	for i := range n {
		turns = append(turns, readRange(i%6, 1+(i/6)%3*200))
	}
	return append(turns, modeltest.Finish("read every package"))
}

// codeTaskTrajectory is a noisy 60-step code task: explore, read the
// packages in 200-line ranges, run the verbose test suite, a wrong edit,
// the fix, the suite again, finish.
func codeTaskTrajectory() []modeltest.Turn {
	suite := modeltest.Call("run_command", map[string]any{"command": "go test -v ./..."})
	turns := []modeltest.Turn{
		modeltest.Call("list_files", map[string]any{"path": "."}),
		modeltest.Call("search", map[string]any{"pattern": "func Increment"}),
		suite,
	}
	for i := range 45 {
		turns = append(turns, readRange(i%6, 1+(i/6)%3*200))
		if i%15 == 14 {
			turns = append(turns, modeltest.Call("search", map[string]any{"pattern": fmt.Sprintf("handle%d\\(", i)}))
		}
	}
	edit := func(old, new string) modeltest.Turn {
		return modeltest.Call("edit_file", map[string]any{"path": "pkg3/file.go", "old_text": old, "new_text": new})
	}
	turns = append(turns,
		edit("\treturn x // the bug\n", "\treturn x * 1 // wrong\n"), suite, readRange(3, 1),
		edit("\treturn x * 1 // wrong\n", "\treturn x + 1 // fixed\n"), suite, readRange(3, 1),
		modeltest.Call("search", map[string]any{"pattern": "Increment"}), suite,
	)
	return append(turns, modeltest.Finish("fixed Increment"))
}

// A model of no known family asks its server (a base URL .../v1) for its
// window, once: vLLM's GET /v1/models (max_model_len), else llama.cpp's GET
// /props (n_ctx); a window configured or known from the family asks
// nothing.
func TestWindowAskedOfTheServer(t *testing.T) {
	const vllm = `{"object":"list","data":[{"id":"other","object":"model","max_model_len":4096},{"id":"qwen","object":"model","max_model_len":8192}]}`
	const llamaModels = `{"object":"list","data":[{"id":"model.gguf","object":"model","meta":{"n_ctx_train":131072}}]}`
	const llamaProps = `{"default_generation_settings":{"n_ctx":16384,"params":{}},"total_slots":1}`
	for _, tt := range []struct {
		name, model        string
		configured         int
		models, props      string
		want, wantRequests int
	}{
		{"vLLM", "qwen", 0, vllm, "", 8192, 1},
		{"vLLM, one model served", "alias", 0, `{"data":[{"id":"qwen","max_model_len":12000}]}`, "", 12000, 1},
		{"llama.cpp", "model.gguf", 0, llamaModels, llamaProps, 16384, 2},
		{"a server that says nothing", "qwen", 0, "", "", 32_768, 2},
		{"configured", "qwen", 9000, vllm, "", 9000, 0},
		{"a known family", "gpt-4o-mini", 0, vllm, "", 128_000, 0},
		{"a base URL not of the form .../v1", "qwen", 0, vllm, "", 32_768, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var requests []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests = append(requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
				body := map[string]string{"/v1/models": tt.models, "/props": tt.props}[r.URL.Path]
				if body == "" {
					http.NotFound(w, r)
					return
				}
				_, _ = io.WriteString(w, body)
			}))
			defer srv.Close()
			base := srv.URL + "/v1/"
			if tt.name == "a base URL not of the form .../v1" {
				base = srv.URL + "/api"
			}
			m, err := openai.New(openai.Config{Model: tt.model, BaseURL: base, APIKey: "k", ContextWindow: tt.configured})
			if err != nil {
				t.Fatal(err)
			}
			if got, again := m.ContextWindow(), m.ContextWindow(); got != tt.want || again != got {
				t.Fatalf("ContextWindow() = %d, then %d; want %d", got, again, tt.want)
			}
			if len(requests) != tt.wantRequests || len(requests) > 0 && requests[0] != "GET /v1/models Bearer k" {
				t.Fatalf("requests %q, want %d, the first GET /v1/models with the key", requests, tt.wantRequests)
			}
		})
	}
}
