package modeltest

import (
	"bytes"
	gocmp "cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/internal/adapt"
)

// APIKey is the key a Provider's New configures; its Server sees it.
const APIKey = "sk-test-key"

// Config is a provider adapter's configuration (openai.Config and
// anthropic.Config are this one type); Provider.New fills in what a test
// leaves empty of the model, the server and the key.
type Config = adapt.Config

// Provider is a provider adapter under the shared tests of RunProvider.
type Provider struct {
	// Name names the provider in errors, e.g. "openai".
	Name  string
	Codec Codec
	// Make is the adapter's constructor (openai.New, anthropic.New), and
	// Model the model name of its tests.
	Make  func(Config) (*adapt.Model, error)
	Model string
	// DefaultWindow is the context window of Model without
	// Config.ContextWindow.
	DefaultWindow int
	// Prefix returns the part of a request body that must be the same in
	// every request of a run (the system prompt and the tool definitions).
	Prefix func(tb testing.TB, body []byte) []byte
	// Tools returns the tool definitions of a request body, in order.
	Tools func(tb testing.TB, body []byte) []ToolDef
	// System returns the system prompt of a request body.
	System func(tb testing.TB, body []byte) string
}

// New returns the adapter's model of cfg, talking to s with the key APIKey
// unless cfg says otherwise.
func (p Provider) New(tb testing.TB, s *Server, cfg Config) *adapt.Model {
	tb.Helper()
	cfg.Model, cfg.BaseURL = gocmp.Or(cfg.Model, p.Model), gocmp.Or(cfg.BaseURL, s.URL)
	cfg.APIKey, cfg.HTTPClient = gocmp.Or(cfg.APIKey, APIKey), gocmp.Or(cfg.HTTPClient, s.Client)
	m, err := p.Make(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// ToolDef is a tool definition as a request carries it.
type ToolDef struct {
	Name, Description string
	// Schema is the tool's input schema, decoded.
	Schema map[string]any
}

// RunProvider runs the tests every provider adapter passes over its fake
// server: the conformance suite (Run) and context management (RunContext)
// over a Scripted stand-in, then retries, timeouts, cancellation, provider
// errors, over-window refusals, tool rendering, usage and invalid output.
func RunProvider(t *testing.T, p Provider) {
	scripted := func(t testing.TB, cfg Config, turns ...Turn) (agent.Model, *Server) {
		s := Scripted(t, p.Codec, 0, turns)
		return p.New(t, s, cfg), s
	}
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		Run(t, func(t *testing.T, turns []Turn) agent.Model {
			m, _ := scripted(t, Config{}, turns...)
			return m
		})
	})
	t.Run("Context", func(t *testing.T) {
		t.Parallel()
		RunContext(t, p)
	})

	// A rate limit is retried as late as Retry-After asks (a lower bound
	// only, the one wait of these tests; in fractional seconds, which
	// adapt's tests read with the other forms, to keep it short).
	t.Run("RetryAfter", func(t *testing.T) {
		t.Parallel()
		limit := firstError(t, p, http.StatusTooManyRequests)
		s := NewServer(t, p.Codec,
			Response{Status: limit.Status, Header: map[string]string{"Retry-After": "0.3"}, Body: Testdata(t, limit.File)},
			Answer(multiply()))
		a, err := Ask(t, context.Background(), p.New(t, s, Config{}), Task, agent.NewHistory())
		if err != nil || a.ToolCall == nil {
			t.Fatalf("action %+v, %v", a, err)
		}
		times := s.Arrivals()
		if len(times) != 2 {
			t.Fatalf("%d requests, want 2", len(times))
		}
		if gap := times[1].Sub(times[0]); gap < 290*time.Millisecond {
			t.Fatalf("retried after %v, before Retry-After's 0.3s", gap)
		}
	})
	// Each recorded error: 429 and 5xx retried until the retries run out,
	// other statuses at once; the run ends with model_error and a
	// *model.ProviderError whose text names the provider, the status and
	// the code, never the provider's message or anything sent.
	for _, e := range p.Codec.Errors {
		t.Run(fmt.Sprintf("Error%d", e.Status), func(t *testing.T) {
			body := Testdata(t, e.File)
			var msg struct{ Error struct{ Message string } }
			if err := json.Unmarshal(body, &msg); err != nil || msg.Error.Message == "" {
				t.Fatalf("%s has no error.message: %v", e.File, err)
			}
			fail := Response{Status: e.Status, Header: map[string]string{"Retry-After": "0"}, Body: body}
			retried := e.Status == http.StatusTooManyRequests || e.Status >= 500
			retries, requests := 0, 1
			if retried {
				retries, requests = 2, 3
			}
			s := NewServer(t, p.Codec, fail, fail, fail)
			res, events, err := RunTask(t, p.New(t, s, Config{MaxRetries: retries}), agent.Options{})
			var pe *model.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("Run error %v, want a *model.ProviderError", err)
			}
			if pe.Provider != p.Name || pe.StatusCode != e.Status || pe.Code != e.Code || pe.Retries != retries || s.Count() != requests {
				t.Fatalf("provider error %+v after %d requests; want %s, status %d, code %s, %d retries", pe, s.Count(), p.Name, e.Status, e.Code, retries)
			}
			after := ""
			if retried {
				after = " after 2 retries"
			}
			want := fmt.Sprintf("%s: request failed%s: %d", p.Name, after, e.Status)
			if text := http.StatusText(e.Status); text != "" {
				want += " " + text
			}
			want += " (" + e.Code + ")"
			if got := pe.Error(); got != want {
				t.Fatalf("error = %q, want %q", got, want)
			}
			for _, secret := range []string{msg.Error.Message, Task.Prompt, APIKey} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error repeats %q: %v", secret, err)
				}
			}
			last := events[len(events)-1]
			if res.ExitReason != gen.ExitReasonModelError || res.Error == nil || !strings.Contains(*res.Error, want) ||
				last.EventType != gen.TraceEventTypeRunFinished || last.Error == nil || !strings.Contains(*last.Error, want) {
				t.Fatalf("result %+v, run_finished %+v; want model_error saying %q", res, last, want)
			}
			s = NewServer(t, p.Codec, fail)
			_, err = agent.Answer(t.Context(), "Compute 12 x 7.", p.New(t, s, Config{MaxRetries: -1}), agent.Options{})
			if !errors.Is(err, agent.ErrModel) || !errors.As(err, &pe) || pe.StatusCode != e.Status {
				t.Fatalf("Answer error %v, want ErrModel wrapping the provider error", err)
			}
		})
	}
	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, Blocked())
		_, err := Ask(t, context.Background(), p.New(t, s, Config{Timeout: 100 * time.Millisecond, MaxRetries: -1}), Task, agent.NewHistory())
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.Timeout != 100*time.Millisecond {
			t.Fatalf("err = %v, want a provider timeout", err)
		}
		if got, want := err.Error(), p.Name+": request timed out after 100ms"; got != want {
			t.Fatalf("error = %q, want %q", got, want)
		}
	})
	// Cancelled mid-request: Next returns the context's error, no provider
	// error, and a run ends as cancelled.
	t.Run("CancelMidRequest", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, Blocked(), Blocked())
		m := p.New(t, s, Config{})
		cancelled := func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() {
				<-s.Arrived()
				cancel()
			}()
			return ctx
		}
		_, err := m.Next(cancelled(), Request(t, agent.NewHistory()))
		var pe *model.ProviderError
		if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
			t.Fatalf("err = %v, want context.Canceled and no provider error", err)
		}
		done := make(chan gen.RunResult, 1)
		go func() {
			res, _ := agent.Run(cancelled(), Task, m, agent.Options{Tools: Runtime(t)})
			done <- res
		}()
		select {
		case res := <-done:
			if res.ExitReason != gen.ExitReasonCancelled {
				t.Fatalf("result = %+v, want cancelled", res)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the run did not end within 10s of the cancellation")
		}
	})
	// 400s in other wordings: an over-window refusal wraps
	// agent.ErrContextLength, with the window it names; any other 400
	// does not.
	for _, b := range p.Codec.BadRequests {
		t.Run("BadRequest/"+b.Name, func(t *testing.T) {
			s := NewServer(t, p.Codec, Response{Status: http.StatusBadRequest, Body: []byte(b.Body)})
			_, err := p.New(t, s, Config{}).Next(context.Background(), Request(t, agent.NewHistory()))
			var pe *model.ProviderError
			if !errors.As(err, &pe) || errors.Is(err, agent.ErrContextLength) != b.Over {
				t.Fatalf("err = %v, want a ProviderError that is over the window: %v", err, b.Over)
			}
			var cl *agent.ContextLengthError
			if errors.As(err, &cl) != b.Over || cl != nil && cl.Window != b.Window {
				t.Fatalf("err = %v (a ContextLengthError: %+v), want one naming the window %d: %v", err, cl, b.Window, b.Over)
			}
		})
	}
	t.Run("ContextWindow", func(t *testing.T) {
		s := NewServer(t, p.Codec)
		for cfg, want := range map[int]int{0: p.DefaultWindow, 16_000: 16_000} {
			if got := contextSizer(t, p.New(t, s, Config{ContextWindow: cfg})).ContextWindow(); got != want {
				t.Errorf("Config.ContextWindow %d: window %d, want %d", cfg, got, want)
			}
		}
	})
	t.Run("Tools", func(t *testing.T) {
		m, s := scripted(t, Config{}, Finish("84"))
		if _, err := Ask(t, context.Background(), m, Task, agent.NewHistory()); err != nil {
			t.Fatal(err)
		}
		checkTools(t, p.Tools(t, s.Bodies()[0]))
		if key := s.Key(0); key != APIKey {
			t.Fatalf("API key sent = %q, want %q", key, APIKey)
		}
	})
	// The default system prompt is the code-task prompt with the finish
	// tool named; Config.System replaces it, the finish tool named too.
	t.Run("SystemPrompt", func(t *testing.T) {
		s := Scripted(t, p.Codec, 0, []Turn{Finish("84"), Finish("84")})
		for _, system := range []string{"", "Be brief. End with {{finish}}."} {
			if _, err := p.New(t, s, Config{System: system}).Next(context.Background(), Request(t, agent.NewHistory())); err != nil {
				t.Fatal(err)
			}
		}
		def := p.System(t, s.Bodies()[0])
		for _, want := range []string{"call finish with a short summary", "[… 120 lines, 8450 bytes omitted; … …]", "relative to the workspace root", "completion check"} {
			if !strings.Contains(def, want) {
				t.Errorf("the default system prompt lacks %q", want)
			}
		}
		if strings.Contains(def, "{{") {
			t.Errorf("the default system prompt has a placeholder left: %q", def)
		}
		if got := p.System(t, s.Bodies()[1]); got != "Be brief. End with finish." {
			t.Fatalf("system prompt = %q, want the Config's with the finish tool named", got)
		}
	})
	// A summarization request is Next's request, its prefix unchanged,
	// plus SummaryInstruction; the reply's text, trimmed, and usage come
	// back; a reply without text is no summary.
	t.Run("Summarize", func(t *testing.T) {
		u := &gen.Usage{InputTokens: 900, OutputTokens: 40}
		s := NewServer(t, p.Codec, Answer(Finish("84")),
			OK(p.Codec.Reply(Turn{Text: "  " + Summary + "\n"}, 1, u)), OK(p.Codec.Reply(Turn{Text: " "}, 2, u)))
		m := p.New(t, s, Config{})
		h := LongHistory(3, 50)
		if _, err := m.Next(context.Background(), Request(t, h)); err != nil {
			t.Fatal(err)
		}
		req := Request(t, h)
		req.Summarize = true
		got, err := m.Next(context.Background(), req)
		if err != nil || got.Summary != Summary || !cmp.Equal(got.Usage, u) || len(got.Actions) != 0 {
			t.Fatalf("summary turn %+v, %v; want the summary and its usage", got, err)
		}
		bodies := s.Bodies()
		if !bytes.Equal(p.Prefix(t, bodies[0]), p.Prefix(t, bodies[1])) {
			t.Fatal("the summary request's prefix differs from Next's: the cached prefix is lost")
		}
		if bytes.Contains(bodies[0], []byte(SummaryInstruction)) || !bytes.Contains(bodies[1], []byte(SummaryInstruction)) {
			t.Fatal("the instruction is not in the summary request only")
		}
		if _, err := m.Next(context.Background(), req); err == nil {
			t.Fatal("a summary request answered without text succeeded")
		}
	})
	// Tools a provider cannot be offered (one named like the finish tool,
	// two of one name) fail the request before anything is sent.
	t.Run("BadTools", func(t *testing.T) {
		s := NewServer(t, p.Codec)
		m := p.New(t, s, Config{})
		specs := Runtime(t).Specs()
		for _, tt := range []struct {
			tools []gen.ToolSpec
			want  string
		}{
			{append(slices.Clone(specs), gen.ToolSpec{Name: string(gen.ActionTypeFinish)}), "clashes with the finish tool"},
			{append(slices.Clone(specs), specs[0]), "two tools are named"},
		} {
			req := Request(t, agent.NewHistory())
			req.Tools = tt.tools
			if _, err := m.Next(context.Background(), req); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		}
		if n := s.Count(); n != 0 {
			t.Fatalf("%d requests sent, want none", n)
		}
	})
	// Each call's usage is what the provider reported for it, in the
	// trace and summed in the result; a token budget ends the run after
	// the call that passes it, even a finish.
	t.Run("Usage", func(t *testing.T) {
		turns := []Turn{Parallel(multiply(), subtract()), Finish("4")}
		m, s := scripted(t, Config{}, turns...)
		res, events, err := RunTask(t, m, agent.Options{})
		if err != nil || res.ExitReason != gen.ExitReasonFinished {
			t.Fatalf("result %+v, %v", res, err)
		}
		var want, got []*gen.Usage
		var sum gen.Usage
		for _, body := range s.Bodies() {
			u := gen.Usage{InputTokens: int64(StandInTokens(body)), OutputTokens: 10}
			want = append(want, &u)
			sum.InputTokens, sum.OutputTokens = sum.InputTokens+u.InputTokens, sum.OutputTokens+u.OutputTokens
		}
		want = slices.Insert(want, 1, nil) // a turn's usage rides on its first action
		for _, ev := range events {
			if ev.EventType == gen.TraceEventTypeModelAction {
				got = append(got, ev.Usage)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("usage per action (-sent +trace):\n%s", diff)
		}
		if diff := cmp.Diff(&sum, res.Usage); diff != "" {
			t.Fatalf("run usage (-want +got):\n%s", diff)
		}
		m, _ = scripted(t, Config{}, turns...)
		budget := want[0].InputTokens + want[0].OutputTokens + 1
		res, _, err = RunTask(t, m, agent.Options{TokenBudget: budget})
		if err != nil || res.ExitReason != gen.ExitReasonTokenBudgetExceeded || res.StepsUsed != 2 || res.Answer != nil || !cmp.Equal(&sum, res.Usage) {
			t.Fatalf("result %+v, %v; want token_budget_exceeded after 2 steps, no answer", res, err)
		}
	})
	t.Run("NoUsage", func(t *testing.T) {
		s := NewServer(t, p.Codec, OK(p.Codec.Reply(Finish("84"), 0, nil)))
		a, err := Ask(t, context.Background(), p.New(t, s, Config{}), Task, agent.NewHistory())
		if err != nil || a.Finish == nil || a.Usage != nil {
			t.Fatalf("action %+v, %v; want a finish without usage", a, err)
		}
	})
	for _, inv := range p.Codec.Invalid {
		t.Run("Invalid/"+inv.File, func(t *testing.T) {
			s := NewServer(t, p.Codec, OK(Testdata(t, inv.File)))
			_, err := Ask(t, context.Background(), p.New(t, s, Config{}), Task, agent.NewHistory())
			var ie *agent.InvalidOutputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want invalid output", err)
			}
			if !strings.Contains(ie.Message, inv.Message) {
				t.Fatalf("message = %q, want it to contain %q", ie.Message, inv.Message)
			}
			if inv.Raw != "" && strings.Contains(ie.Message, inv.Raw) {
				t.Fatalf("the message repeats the output: %q", ie.Message)
			}
			if ie.Raw != inv.Raw {
				t.Fatalf("raw = %q, want %q", ie.Raw, inv.Raw)
			}
			if ie.Usage == nil || ie.Usage.InputTokens != inv.InputTokens {
				t.Fatalf("usage = %+v, want the reply's", ie.Usage)
			}
		})
	}
	// Finish arguments are validated against the spec's Finish.
	t.Run("FinishSchema", func(t *testing.T) {
		for _, args := range []map[string]any{{}, {"answer": "x", "confidence": 1.0}, {"answer": 84.0}} {
			m, _ := scripted(t, Config{}, Call(string(gen.ActionTypeFinish), args))
			_, err := m.Next(context.Background(), Request(t, agent.NewHistory()))
			var ie *agent.InvalidOutputError
			if !errors.As(err, &ie) || !strings.Contains(ie.Message, "do not match its schema") {
				t.Fatalf("finish %v: err = %v, want invalid output against the schema", args, err)
			}
		}
	})
	// The Model keeps no state: asking twice with the same history asks
	// the provider twice, for the same turn.
	t.Run("Stateless", func(t *testing.T) {
		body := p.Codec.Reply(Parallel(multiply(), subtract()), 0, &gen.Usage{InputTokens: 50, OutputTokens: 10})
		s := NewServer(t, p.Codec, OK(body), OK(body))
		m := p.New(t, s, Config{})
		first, err := m.Next(context.Background(), Request(t, agent.NewHistory()))
		if err != nil || len(first.Actions) != 2 {
			t.Fatalf("turn = %+v, %v", first, err)
		}
		again, err := m.Next(context.Background(), Request(t, agent.NewHistory()))
		if err != nil || !cmp.Equal(again, first) {
			t.Fatalf("the second turn = %+v, %v; want the first again", again, err)
		}
		if n := s.Count(); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
	})
}

func firstError(t *testing.T, p Provider, status int) ErrorReply {
	t.Helper()
	for _, e := range p.Codec.Errors {
		if e.Status == status {
			return e
		}
	}
	t.Fatalf("the codec has no recorded %d", status)
	return ErrorReply{}
}

// RunTask runs Task with m, the calculator runtime and raw recording
// (5 steps unless opts says).
func RunTask(t *testing.T, m agent.Model, opts agent.Options) (gen.RunResult, []gen.TraceEvent, error) {
	t.Helper()
	var rec Recorder
	opts.Tools, opts.Trace, opts.RecordRaw = Runtime(t), &rec, true
	if opts.MaxSteps == 0 {
		opts.MaxSteps = 5
	}
	res, err := agent.Run(context.Background(), Task, m, opts)
	return res, rec.Events, err
}

// checkTools checks the tools a request offers: the runtime's, in order,
// each with its spec's name, description and output description (not its
// error description, which error results give) and input schema; then the
// finish tool, from the spec's Finish without the fields the adapter sets.
func checkTools(t *testing.T, tools []ToolDef) {
	t.Helper()
	specs := Runtime(t).Specs()
	if len(tools) != len(specs)+1 {
		t.Fatalf("%d tools offered, want the %d runtime tools and finish", len(tools), len(specs))
	}
	roundTrip := func(v any) map[string]any {
		data, _ := json.Marshal(v)
		var out map[string]any
		_ = json.Unmarshal(data, &out)
		return out
	}
	for i, sp := range specs {
		tool := tools[i]
		if tool.Name != sp.Name {
			t.Fatalf("tool %d = %s, want %s", i, tool.Name, sp.Name)
		}
		if sp.ErrorDescription != "" && strings.Contains(tool.Description, sp.ErrorDescription) {
			t.Fatalf("%s: the description carries the error description, which error results already give", sp.Name)
		}
		for _, part := range []string{sp.Description, sp.OutputDescription} {
			if !strings.Contains(tool.Description, part) {
				t.Fatalf("%s: description %q lacks %q", sp.Name, tool.Description, part)
			}
		}
		if diff := cmp.Diff(roundTrip(sp.InputSchema), tool.Schema); diff != "" {
			t.Fatalf("%s: the input schema differs from the spec's (-spec +sent):\n%s", sp.Name, diff)
		}
	}
	doc, err := gen.SpecDoc()
	if err != nil {
		t.Fatal(err)
	}
	finish := doc.Schemas[reflect.TypeFor[gen.Finish]().Name()]
	finishProps := finish["properties"].(map[string]any)
	finishDescription := finish["description"].(string)
	fin := tools[len(specs)]
	if fin.Name != string(gen.ActionTypeFinish) || fin.Description != finishDescription {
		t.Fatalf("finish tool = %+v", fin)
	}
	props, _ := fin.Schema["properties"].(map[string]any)
	// The adapter sets type, reasoning and text; the model gives the rest.
	if _, ok := props["type"]; ok || len(props) != len(finishProps)-3 {
		t.Fatalf("finish properties %v should be the Finish properties without type, reasoning and text", props)
	}
	answer, _ := props["answer"].(map[string]any)
	if answer["description"] != finishProps["answer"].(map[string]any)["description"] || answer["type"] != "string" {
		t.Fatalf("finish answer property = %v", answer)
	}
	if diff := cmp.Diff([]any{"answer"}, fin.Schema["required"]); diff != "" {
		t.Fatalf("finish required (-want +got):\n%s", diff)
	}
	if fin.Schema["additionalProperties"] != false {
		t.Fatalf("the finish schema must forbid other properties, as the spec does: %v", fin.Schema)
	}
}

// SameShape checks that the JSON got, a codec's rendering, is shaped like
// want, its provider's recorded body: every field got has is in want, with
// a value of the same kind (null goes with any), recursively; an array's
// element is checked against each of want's until one matches.
func SameShape(tb testing.TB, got, want []byte) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		tb.Fatalf("the reference is not JSON: %v", err)
	}
	if path := unlike(g, w, ""); path != "" {
		tb.Fatalf("the rendering differs from the recorded body at %s", path)
	}
}

// unlike returns the path of the first value of g not shaped like w's.
func unlike(g, w any, path string) string {
	if g == nil || w == nil {
		return ""
	}
	switch g := g.(type) {
	case map[string]any:
		w, ok := w.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range g {
			wv, ok := w[k]
			if !ok {
				return path + "/" + k
			}
			if p := unlike(v, wv, path+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		w, ok := w.([]any)
		if !ok || len(w) == 0 && len(g) > 0 {
			return path
		}
		for i, v := range g {
			p := fmt.Sprintf("%s/%d", path, i)
			if !slices.ContainsFunc(w, func(wv any) bool { return unlike(v, wv, p) == "" }) {
				return p
			}
		}
	default:
		if reflect.TypeOf(g) != reflect.TypeOf(w) {
			return path
		}
	}
	return ""
}

// JSONEqual fails tb unless the JSON texts got and want are equal as values.
func JSONEqual(tb testing.TB, what, got, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		tb.Fatalf("%s is not JSON: %v", what, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatal(err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		tb.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

// Env is how model.FromConfig builds a provider's model from the
// environment.
type Env struct {
	// Config is a configuration of the provider's model, without key or
	// base URL.
	Config gen.ModelConfig
	// APIKey and BaseURL name the environment variables.
	APIKey, BaseURL string
	// ErrNoAPIKey is the error without a key.
	ErrNoAPIKey error
}

// RunFromConfig checks that model.FromConfig builds p's model with the key
// and the base URL of the environment, and fails with e.ErrNoAPIKey
// without them. It sets environment variables: call it from a test that
// is not parallel.
func RunFromConfig(t *testing.T, p Provider, e Env) {
	s := Scripted(t, p.Codec, 0, []Turn{Finish("84")})
	t.Setenv(e.APIKey, "sk-from-env")
	t.Setenv(e.BaseURL, s.URL)
	m, err := model.FromConfig(e.Config, model.Options{HTTPClient: s.Client})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ask(t, context.Background(), m, Task, agent.NewHistory()); err != nil {
		t.Fatal(err)
	}
	if got := s.Key(0); got != "sk-from-env" {
		t.Fatalf("API key sent = %q, want the environment's", got)
	}
	t.Setenv(e.APIKey, "")
	t.Setenv(e.BaseURL, "")
	if _, err := model.FromConfig(e.Config, model.Options{}); !errors.Is(err, e.ErrNoAPIKey) {
		t.Fatalf("err = %v, want %v", err, e.ErrNoAPIKey)
	}
}
