package mcpserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
)

// The defaults of HTTPOptions: what /mcp of `specloop serve` holds.
const (
	// DefaultMaxSessions is the most sessions open at once.
	DefaultMaxSessions = 256
	// DefaultMaxSessionsPerClient is the most sessions open at once from
	// one client address.
	DefaultMaxSessionsPerClient = 32
	// DefaultSessionTimeout closes a session no request came for in that
	// long (a client that went away without ending it).
	DefaultSessionTimeout = 5 * time.Minute
)

// sessionIDHeader is the header of the streamable HTTP transport that
// names a session.
const sessionIDHeader = "Mcp-Session-Id"

// HTTPOptions configure NewHTTPHandler; the zero value uses the defaults.
type HTTPOptions struct {
	// Logger receives the SDK's log; nil discards it.
	Logger *slog.Logger
	// MaxSessionsPerClient caps the sessions open from one client address
	// (the request's remote address, without its port); 0 means the
	// default. A new session beyond it, or beyond DefaultMaxSessions in
	// all, is refused with 429 and a problem document.
	MaxSessionsPerClient int
	// SessionTimeout closes a session idle for that long; 0 means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
}

// NewHTTPHandler serves srv over streamable HTTP (stateful sessions), with
// the SDK's DNS-rebinding protection, its request body limit, and the
// session caps and idle timeout of opts: without them any client could
// open sessions until the process runs out of memory, each kept for as
// long as the timeout.
func NewHTTPHandler(srv *mcp.Server, opts HTTPOptions) http.Handler {
	if opts.MaxSessionsPerClient <= 0 {
		opts.MaxSessionsPerClient = DefaultMaxSessionsPerClient
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	return &sessionCap{
		srv:      srv,
		opts:     opts,
		sessions: map[string]string{},
		pending:  map[string]int{},
		next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Logger:         opts.Logger,
			SessionTimeout: opts.SessionTimeout,
		}),
	}
}

// sessionCap counts the sessions of a streamable handler by client and
// refuses new ones beyond the caps. A session is new when a POST names
// none; once it is answered, its id (the response's Mcp-Session-Id) is
// counted for its client until the SDK no longer has it (ended by DELETE,
// the idle timeout or a failed initialization).
type sessionCap struct {
	srv  *mcp.Server
	opts HTTPOptions
	next http.Handler

	mu       sync.Mutex
	sessions map[string]string // session id -> client
	pending  map[string]int    // client -> new sessions being answered
}

func (h *sessionCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) != "" {
		h.next.ServeHTTP(w, r)
		return
	}
	client := clientOf(r)
	if !h.reserve(client) {
		refuse(w, fmt.Sprintf("too many MCP sessions (at most %d, %d per client); end one (DELETE /mcp) or retry later",
			DefaultMaxSessions, h.opts.MaxSessionsPerClient))
		return
	}
	defer h.settle(client, w)
	h.next.ServeHTTP(w, r)
}

// clientOf is the client address of a request, without its port.
func clientOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// reserve takes a place for a new session of client, if the caps allow.
func (h *sessionCap) reserve(client string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.prune()
	all, mine := len(h.sessions), h.pending[client]
	for _, p := range h.pending {
		all += p
	}
	for _, c := range h.sessions {
		if c == client {
			mine++
		}
	}
	if all >= DefaultMaxSessions || mine >= h.opts.MaxSessionsPerClient {
		return false
	}
	h.pending[client]++
	return true
}

// settle turns the place reserve took into the session the response
// named, if the SDK keeps it.
func (h *sessionCap) settle(client string, w http.ResponseWriter) {
	id := w.Header().Get(sessionIDHeader)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[client]--; h.pending[client] == 0 {
		delete(h.pending, client)
	}
	if id != "" && h.live()[id] {
		h.sessions[id] = client
	}
}

// prune forgets the sessions the SDK no longer has.
func (h *sessionCap) prune() {
	live := h.live()
	for id := range h.sessions {
		if !live[id] {
			delete(h.sessions, id)
		}
	}
}

// live are the ids of srv's open sessions.
func (h *sessionCap) live() map[string]bool {
	ids := map[string]bool{}
	for ss := range h.srv.Sessions() {
		if id := ss.ID(); id != "" {
			ids[id] = true
		}
	}
	return ids
}

// refuse answers 429 with a problem document, as the API answers its own
// caps.
func refuse(w http.ResponseWriter, detail string) {
	p := gen.Problem{Type: "about:blank", Title: http.StatusText(http.StatusTooManyRequests), Status: http.StatusTooManyRequests, Detail: &detail}
	body, _ := json.Marshal(p)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}
