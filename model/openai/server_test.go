package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
)

const apiKey = "sk-test-key"

// reply is one canned HTTP response of the fake provider.
type reply struct {
	status int
	header map[string]string
	body   []byte
	// block holds the response until the client goes away.
	block bool
}

// ok is a 200 with a testdata body.
func ok(t testing.TB, name string) reply {
	return reply{status: http.StatusOK, body: testdata(t, name)}
}

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// server is a fake Chat Completions endpoint that answers with canned
// replies in order and records every request.
type server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	bodies   [][]byte
	times    []time.Time
	arrived  chan struct{} // receives once per request, when it arrives
	authSeen []string
	// window, when positive, is the context window the stand-in enforces:
	// a request of more tokens (modeltest.StandInTokens) is refused with
	// OpenAI's 400 context_length_exceeded, and takes no reply.
	window int
	// summary, when set, answers every summarization request (one holding
	// modeltest.SummaryInstruction), which then takes no reply.
	summary []byte
	// countUsage makes every reply report the request's real input
	// tokens (modeltest.StandInTokens), as a provider does, in place of
	// the canned reply's.
	countUsage bool
}

func newServer(t testing.TB, replies ...reply) *server {
	s := &server{t: t, replies: replies, arrived: make(chan struct{}, 100)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("read request: %v", err)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.times = append(s.times, time.Now())
	s.authSeen = append(s.authSeen, r.Header.Get("Authorization"))
	if r.Method != http.MethodPost || r.URL.Path != "/chat/completions" {
		s.t.Errorf("request %s %s, want POST /chat/completions", r.Method, r.URL.Path)
	}
	tokens := modeltest.StandInTokens(body)
	if s.window > 0 && tokens > s.window {
		s.mu.Unlock()
		s.arrive()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, s.window, tokens)
		return
	}
	if s.summary != nil && bytes.Contains(body, []byte(modeltest.SummaryInstruction)) {
		s.mu.Unlock()
		s.arrive()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.usage(s.summary, tokens))
		return
	}
	if len(s.replies) == 0 {
		s.mu.Unlock()
		s.t.Errorf("unexpected request %d", len(s.bodies))
		http.Error(w, `{"error":{"message":"no reply left","type":"test"}}`, http.StatusTeapot)
		return
	}
	rep := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()
	s.arrive()
	if rep.block {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	if rep.status == http.StatusOK {
		rep.body = s.usage(rep.body, tokens)
	}
	_, _ = w.Write(rep.body)
}

// usage returns body with its usage's prompt_tokens set to tokens, when the
// stand-in counts usage.
func (s *server) usage(body []byte, tokens int) []byte {
	if !s.countUsage {
		return body
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		s.t.Errorf("a canned reply is not JSON: %v", err)
		return body
	}
	u, _ := v["usage"].(map[string]any)
	if u == nil {
		u = map[string]any{}
	}
	u["prompt_tokens"] = tokens
	v["usage"] = u
	out, err := json.Marshal(v)
	if err != nil {
		s.t.Errorf("re-encode a reply: %v", err)
		return body
	}
	return out
}

// scripted returns a stand-in that answers with the conformance suite's
// turns, in order.
func scripted(t testing.TB, turns []modeltest.Turn) *server {
	replies := make([]reply, len(turns))
	for i, turn := range turns {
		replies[i] = reply{status: http.StatusOK, body: completion(turn, i)}
	}
	s := newServer(t, replies...)
	s.countUsage = true
	s.summary = completion(modeltest.Turn{Text: modeltest.Summary}, len(turns))
	return s
}

// arrive signals a request's arrival to a test that waits for it; with
// nobody waiting (a long run), the signal is dropped.
func (s *server) arrive() {
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

// raw returns the request bodies so far, as sent.
func (s *server) raw() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// requests returns the decoded request bodies so far.
func (s *server) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(s.bodies))
	for i, b := range s.bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			s.t.Fatalf("request %d is not JSON: %v", i, err)
		}
	}
	return out
}

// arrivals returns when each request arrived.
func (s *server) arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// auth returns the Authorization header of request i.
func (s *server) auth(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authSeen[i]
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// newModel returns a model talking to s with the suite's tools runtime;
// change adjusts the config.
func newModel(t testing.TB, s *server, change func(*openai.Config)) *openai.Model {
	t.Helper()
	cfg := openai.Config{
		Model:      "gpt-4o-mini",
		BaseURL:    s.srv.URL,
		APIKey:     apiKey,
		HTTPClient: s.srv.Client(),
	}
	if change != nil {
		change(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// messages returns the messages of a decoded request.
func messages(t testing.TB, req map[string]any) []map[string]any {
	t.Helper()
	raw, _ := req["messages"].([]any)
	out := make([]map[string]any, len(raw))
	for i, m := range raw {
		out[i] = m.(map[string]any)
	}
	return out
}

// roles returns the role of each message, with "+tool_calls" for an
// assistant message that calls tools.
func roles(msgs []map[string]any) string {
	var parts []string
	for _, m := range msgs {
		r, _ := m["role"].(string)
		if _, ok := m["tool_calls"]; ok {
			r += "+tool_calls"
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, " ")
}
