package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/internal/textclip"
)

// Defaults of the server's edges, for a zero Config field.
const (
	DefaultReadHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout         = 60 * time.Second
	DefaultIdleTimeout         = 2 * time.Minute
	DefaultWriteTimeout        = 30 * time.Second
	DefaultMaxConnections      = 4096
	DefaultMaxStreams          = 1024
	DefaultMaxStreamsPerClient = 256
)

// The edges of the server, what a slow, stalled or hostile client meets
// before any handler:
//
//   - the connection cap (Listener, ConnLimit): at most MaxConnections
//     connections are open at once; at the cap a new connection closes the
//     one idle the longest, and waits (in the kernel's accept queue) only
//     when all are busy;
//   - ReadHeaderTimeout and ReadTimeout (HTTPServer): a request's headers,
//     and then the whole request, body included, must arrive in time, or
//     the connection is dropped (readBody). net/http lifts the read
//     deadline once the body is read, so long responses (an event stream,
//     a command) are not cut by it; IdleTimeout bounds the wait for the
//     next request on a keep-alive connection;
//   - a write deadline before every write of a response (writeDeadlines):
//     a client that stops reading loses its response, its stream, after
//     WriteTimeout, and holds nothing else;
//   - the event-stream caps (streamSlot): MaxStreams open at once, and
//     MaxStreamsPerClient from one client address; beyond either, 429.
//     MaxStreams is at most MaxConnections less a reserve (streamReserve),
//     so streams at their cap leave connections to /healthz, run creation
//     and every other request;
//   - the Host check (checkHost): without a token, only loopback names and
//     AllowedHosts are served (403 otherwise), so a web page cannot reach
//     a token-less loopback server by DNS rebinding;
//   - the cross-origin check (crossOrigin): a state-changing request that
//     a browser sends for a page of another site gets 403.

// HTTPServer returns the http.Server that serves the API with the
// server's timeouts. Serve it on Listener(ln).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ConnState:         s.conns.ConnState,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Listener wraps ln with the cap on concurrent connections. At
// MaxConnections a new connection
// closes the one idle the longest (connected without a whole request yet,
// or between keep-alive requests); only when every connection is busy
// does Accept wait for one to close (see ConnLimit). Idle sockets
// therefore never lock anyone out; serve it with HTTPServer, whose
// ConnState reports the idle ones.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return s.conns.Listener(ln)
}

// streamReserve is how many of MaxConnections event streams never take:
// an eighth of them, 1 to 64, so that /healthz, run creation and every
// other short request find a connection when the streams are at their cap.
func streamReserve(maxConns int) int {
	if maxConns < 2 {
		return 0
	}
	return min(64, max(1, maxConns/8))
}

// edgeDefaults fills the zero edge fields of cfg and checks AllowedHosts,
// returning them normalized (lower case, without brackets or port).
func edgeDefaults(cfg *Config) (map[string]bool, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&cfg.ReadTimeout, DefaultReadTimeout)
	def(&cfg.IdleTimeout, DefaultIdleTimeout)
	def(&cfg.WriteTimeout, DefaultWriteTimeout)
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxStreamsPerClient <= 0 {
		cfg.MaxStreamsPerClient = DefaultMaxStreamsPerClient
	}
	// Streams hold their connections for as long as they are open: they
	// leave a reserve of connections to every other request.
	cfg.MaxStreams = max(1, min(cfg.MaxStreams, cfg.MaxConnections-streamReserve(cfg.MaxConnections)))
	allowed := map[string]bool{}
	for _, h := range cfg.AllowedHosts {
		name := hostName(h)
		if name == "" || strings.ContainsAny(name, "/ \t\r\n@?#*") {
			return nil, fmt.Errorf("server: allowed host %q is not a host name", textclip.Clip(h, 100))
		}
		allowed[name] = true
	}
	return allowed, nil
}

// hostName is the host of a Host header value: lower case, without port
// or IPv6 brackets.
func hostName(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(h)
}

// LocalHost reports whether a Host header value names this server as a
// listener without a token must require: a loopback name or address, or
// one of Config.AllowedHosts. A page that rebinds its own name to
// 127.0.0.1 sends its own name, and is refused.
func (s *Server) LocalHost(h string) bool {
	host := hostName(h)
	if host == "localhost" || s.allowedHosts[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// checkHost refuses, on a server without a token, requests whose Host is
// neither a loopback name or address nor an allowed host: a page that
// rebinds its own name to 127.0.0.1 sends its own name as the Host.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.tokenHash != nil || s.LocalHost(c.Request().Host) {
			return next(c)
		}
		return problemf(http.StatusForbidden, "the Host header does not name this server: without a token it answers to loopback names and --allowed-host names only")
	}
}

// crossOrigin refuses state-changing requests (any method but GET, HEAD
// and OPTIONS) that a browser sends on behalf of another site: those whose
// Sec-Fetch-Site is not same-origin or none, or, without Sec-Fetch-Site,
// whose Origin is not this server (net/http's CrossOriginProtection).
// Requests without either header (curl, the SDK, MCP clients) are not
// from a browser and pass. Without it a page of any site could cancel the
// runs of a token-less loopback server, or start and approve them.
func (s *Server) crossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.origins.Check(c.Request()); err != nil {
			return problemf(http.StatusForbidden, "cross-origin request refused: a page of another site may not change anything on this server (Sec-Fetch-Site or Origin)")
		}
		return next(c)
	}
}

// readBody reads the request body (already limited in size) under the
// connection's read deadline (ReadTimeout), and drops the connection of a
// client too slow to send it, rather than answering it a misleading 400.
func (s *Server) readBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body != nil && r.Body != http.NoBody {
			data, err := io.ReadAll(r.Body)
			if err != nil {
				var ne net.Error
				if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
					// The client is too slow: drop the connection.
					panic(http.ErrAbortHandler)
				}
				return err
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
		}
		return next(c)
	}
}

// writeDeadlines gives every write of the response its own deadline.
func (s *Server) writeDeadlines(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		resp := c.Response()
		resp.Writer = &deadlineWriter{ResponseWriter: resp.Writer, rc: http.NewResponseController(resp.Writer), timeout: s.cfg.WriteTimeout}
		return next(c)
	}
}

// deadlineWriter sets the connection's write deadline before each write
// and flush, so that a client that stops reading fails the write after
// timeout instead of blocking its handler forever.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(p)
}

// FlushError flushes the buffered response under the write deadline.
func (w *deadlineWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.rc.Flush()
}

// Flush implements http.Flusher.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// streamSlots counts the open event streams, in all and per client
// address.
type streamSlots struct {
	mu        sync.Mutex
	total     int
	perClient map[string]int
}

// acquire takes a place for a stream of client, or reports false when
// either cap is reached.
func (st *streamSlots) acquire(client string, maxTotal, maxPerClient int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.total >= maxTotal || st.perClient[client] >= maxPerClient {
		return false
	}
	st.total++
	st.perClient[client]++
	return true
}

func (st *streamSlots) release(client string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.total--
	if st.perClient[client]--; st.perClient[client] <= 0 {
		delete(st.perClient, client)
	}
}

// streamSlot holds a place among the open event streams for the whole
// stream, or refuses it with 429. A client is its connection's address
// (not a forwarded header, which a client chooses itself); behind a
// proxy every client is the proxy, and MaxStreams is what counts.
func (s *Server) streamSlot(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		client := c.Request().RemoteAddr
		if host, _, err := net.SplitHostPort(client); err == nil {
			client = host
		}
		if !s.streams.acquire(client, s.cfg.MaxStreams, s.cfg.MaxStreamsPerClient) {
			c.Response().Header().Set("Retry-After", "5")
			return problemf(http.StatusTooManyRequests, "too many open event streams (at most %d, %d per client); close one or retry later", s.cfg.MaxStreams, s.cfg.MaxStreamsPerClient)
		}
		defer s.streams.release(client)
		return next(c)
	}
}
