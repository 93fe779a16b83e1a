package modeltest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
)

// Codec is a provider's wire format, as its fake Server speaks it. The
// provider's recorded bodies in its package's testdata are the reference
// for what it writes.
type Codec struct {
	// Path is the endpoint the adapter posts to, e.g. "/chat/completions".
	Path string
	// Key returns the API key a request carries.
	Key func(r *http.Request) string
	// Check, when set, returns what is wrong with a request's headers, ""
	// when nothing is.
	Check func(r *http.Request) string
	// Reply renders turn as the body of a 200 reply, the nth of its
	// server, reporting usage (no usage field when nil).
	Reply func(turn Turn, n int, usage *gen.Usage) []byte
	// OverWindow is the body of the provider's 400 refusal of a request
	// of tokens tokens, over a window of window.
	OverWindow func(tokens, window int) []byte
	// Errors are recorded error replies (testdata files): a rate limit,
	// server errors, a refused key.
	Errors []ErrorReply
	// BadRequests are 400 bodies, some refusing the request as over the
	// context window in another wording than OverWindow's, some not.
	BadRequests []BadRequest
	// Invalid are recorded replies that are no valid action.
	Invalid []InvalidReply
}

// ErrorReply is a recorded error reply of a provider.
type ErrorReply struct {
	Status int
	// File is the body's testdata file; its error.message is the
	// provider's message, which an error's text never repeats.
	File string
	// Code is the error code a *model.ProviderError reports for it.
	Code string
}

// BadRequest is a 400 body, whether it refuses the request as over the
// context window, and the window it names (0: none).
type BadRequest struct {
	Name   string
	Body   string
	Over   bool
	Window int
}

// InvalidReply is a recorded reply (a testdata file) that is no valid
// action: the invalid-output message says Message, keeps Raw as the raw
// output without repeating it, and carries the reply's InputTokens.
type InvalidReply struct {
	File, Message, Raw string
	InputTokens        int64
}

// WireCall is one tool call of a turn as a provider reply carries it: the
// tool's name and its arguments as JSON text. Invalid marks the call of an
// invalid turn, whose arguments are InvalidText, no JSON object.
type WireCall struct {
	Name, Arguments string
	Invalid         bool
}

// Calls returns the tool calls a provider reply of t carries (a finish as a
// call of the finish tool); none for a text reply.
func (t Turn) Calls() []WireCall {
	encode := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(data)
	}
	switch {
	case t.Parallel != nil:
		var out []WireCall
		for _, p := range t.Parallel {
			out = append(out, p.Calls()...)
		}
		return out
	case t.ToolCall != nil:
		return []WireCall{{Name: t.ToolCall.ToolName, Arguments: encode(t.ToolCall.Arguments)}}
	case t.Finish != nil:
		return []WireCall{{Name: string(gen.ActionTypeFinish), Arguments: encode(map[string]any{"answer": t.Finish.Answer})}}
	case t.Text != "":
		return nil
	}
	return []WireCall{{Name: calculatorTool, Arguments: InvalidText, Invalid: true}}
}

// Response is one canned HTTP response of a Server.
type Response struct {
	Status int
	Header map[string]string
	Body   []byte
	// Block holds the response until the client goes away.
	Block bool
	// turn, when set, is rendered by the codec when the request arrives,
	// with the request's usage.
	turn *Turn
}

// OK is a 200 with body.
func OK(body []byte) Response { return Response{Status: http.StatusOK, Body: body} }

// Answer is a 200 rendering turn on the provider's wire, reporting the
// request's input tokens (StandInTokens) and 10 output tokens.
func Answer(turn Turn) Response { return Response{Status: http.StatusOK, turn: &turn} }

// Blocked is a response held until the client goes away.
func Blocked() Response { return Response{Block: true} }

// Testdata returns the file name of the test's testdata directory.
func Testdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Server is a fake provider endpoint speaking a Codec: it answers with
// canned responses in order and records every request.
type Server struct {
	// URL is the server's base URL.
	URL string
	// Client is a client for it.
	Client *http.Client

	tb     testing.TB
	codec  Codec
	window int
	// summary makes the server answer every summarization request (one
	// holding SummaryInstruction) with Summary, without using a response.
	summary bool
	// forever answers every request with the one response, recording
	// nothing (for benchmarks).
	forever bool
	arrived chan struct{}

	mu     sync.Mutex
	queue  []Response
	bodies [][]byte
	times  []time.Time
	keys   []string
}

// NewServer returns a server answering with responses in order.
func NewServer(tb testing.TB, codec Codec, responses ...Response) *Server {
	s := &Server{tb: tb, codec: codec, queue: responses, arrived: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(s.handle))
	tb.Cleanup(srv.Close)
	s.URL, s.Client = srv.URL, srv.Client()
	return s
}

// Scripted returns a stand-in of the provider that answers with turns in
// order (Answer), answers summarization requests with Summary and, when
// window is positive, refuses a request of more than window tokens
// (StandInTokens) with the provider's OverWindow, taking no turn.
func Scripted(tb testing.TB, codec Codec, window int, turns []Turn) *Server {
	responses := make([]Response, len(turns))
	for i, t := range turns {
		responses[i] = Answer(t)
	}
	s := NewServer(tb, codec, responses...)
	s.window, s.summary = window, true
	return s
}

// Forever returns a server answering every request with a 200 of body,
// recording nothing: a stand-in for benchmarks.
func Forever(tb testing.TB, codec Codec, body []byte) *Server {
	s := NewServer(tb, codec, OK(body))
	s.forever = true
	return s
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.tb.Errorf("read request: %v", err)
	}
	if s.forever {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.queue[0].Body)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != s.codec.Path {
		s.tb.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, s.codec.Path)
	}
	// Every adapter posts JSON through the same HTTP layer.
	if ct, ua := r.Header.Get("Content-Type"), r.Header.Get("User-Agent"); ct != "application/json" || !strings.HasPrefix(ua, "specloop/") {
		s.tb.Errorf("request with Content-Type %q and User-Agent %q, want application/json from specloop/...", ct, ua)
	}
	if s.codec.Check != nil {
		if msg := s.codec.Check(r); msg != "" {
			s.tb.Errorf("request: %s", msg)
		}
	}
	tokens := StandInTokens(body)
	usage := &gen.Usage{InputTokens: int64(tokens), OutputTokens: 10}
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.times = append(s.times, time.Now())
	s.keys = append(s.keys, s.codec.Key(r))
	var rep Response
	switch {
	case s.window > 0 && tokens > s.window:
		rep = Response{Status: http.StatusBadRequest, Body: s.codec.OverWindow(tokens, s.window)}
	case s.summary && bytes.Contains(body, []byte(SummaryInstruction)):
		rep = OK(s.codec.Reply(Turn{Text: Summary}, n, usage))
	case len(s.queue) == 0:
		s.mu.Unlock()
		s.tb.Errorf("unexpected request %d", n+1)
		http.Error(w, `{"error":{"message":"no reply left","type":"test"}}`, http.StatusTeapot)
		return
	default:
		rep = s.queue[0]
		s.queue = s.queue[1:]
		if rep.turn != nil {
			rep.Body = s.codec.Reply(*rep.turn, n, usage)
		}
	}
	s.mu.Unlock()
	select { // a test waiting for the arrival learns of it; nobody waiting, it is dropped
	case s.arrived <- struct{}{}:
	default:
	}
	if rep.Block {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.Status)
	_, _ = w.Write(rep.Body)
}

// Arrived receives once per request, when it arrives (while a test waits).
func (s *Server) Arrived() <-chan struct{} { return s.arrived }

// Bodies returns the request bodies so far, as sent.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Requests returns the request bodies so far, decoded.
func (s *Server) Requests() []map[string]any {
	bodies := s.Bodies()
	out := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			s.tb.Fatalf("request %d is not JSON: %v", i+1, err)
		}
	}
	return out
}

// Count is the number of requests so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Arrivals returns when each request arrived.
func (s *Server) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// Key returns the API key request i (from 0) carried.
func (s *Server) Key(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[i]
}
