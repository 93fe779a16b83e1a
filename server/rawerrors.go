package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/specloop/specloop/gen"
)

// net/http answers a request it cannot parse (a malformed request line, a
// path with an invalid escape such as %ZZ, oversized headers, an unsupported
// protocol version) itself, before any handler runs, with a plain-text
// response written straight to the connection and then closes it:
//
//	HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request
//
// The spec promises application/problem+json for every error, so
// ProblemListener wraps the listener's connections and rewrites exactly that
// response. Nothing else on the connection has that shape: every response of
// the server's handlers is written through net/http's response writer, which
// never sends "Connection: close" before the status text's plain-text body
// in one write, and the server never answers text/plain.

// rawErrorPrefix is what net/http writes before the status line's code.
var rawErrorPrefix = []byte("HTTP/1.1 ")

// rawErrorHeaders is the header block net/http's own error responses carry.
var rawErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

// problemListener is a listener whose connections have net/http's
// built-in plain-text error responses rewritten as application/problem+json
// documents.
type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: c}, nil
}

// problemConn rewrites a write that is one of net/http's raw error
// responses. net/http writes each of them with a single Write call.
type problemConn struct{ net.Conn }

func (c *problemConn) Write(p []byte) (int, error) {
	if rewritten, ok := rewriteRawError(p); ok {
		if _, err := c.Conn.Write(rewritten); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewriteRawError turns one of net/http's plain-text error responses into
// a problem+json response with the same status; ok is false for anything
// else.
func rewriteRawError(p []byte) (out []byte, ok bool) {
	if !bytes.HasPrefix(p, rawErrorPrefix) {
		return nil, false
	}
	i := bytes.Index(p, rawErrorHeaders)
	if i < 0 {
		return nil, false
	}
	statusLine := p[len(rawErrorPrefix):i] // "400 Bad Request"
	if len(statusLine) < 3 {
		return nil, false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	detail := "the request could not be parsed: its request line, path, headers or protocol version is malformed"
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		detail = "the request's headers are too large"
	case http.StatusHTTPVersionNotSupported:
		detail = "the HTTP version is not supported"
	case http.StatusNotImplemented:
		detail = "the request's transfer encoding is not supported"
	}
	title := http.StatusText(status)
	if title == "" {
		title = "Error"
	}
	body, err := json.Marshal(gen.Problem{Type: "about:blank", Title: title, Status: status, Detail: &detail})
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		status, title, problemContentType, len(body))
	b.Write(body)
	return b.Bytes(), true
}
