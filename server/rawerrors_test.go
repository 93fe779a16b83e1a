package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/server"
)

// rawRequest sends raw bytes to addr and returns the response net/http's
// client parses from the answer.
func rawRequest(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Requests net/http refuses before any handler runs are answered with
// problem+json like every other error, not Go's plain text.
func TestMalformedRequestsGetProblemJSON(t *testing.T) {
	u, err := url.Parse(startNoToken(t, server.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host

	cases := []struct {
		name   string
		raw    string
		status int
	}{
		{"space in the path", "GET /v1/runs/a b HTTP/1.1\r\nHost: localhost\r\n\r\n", 400},
		{"invalid escape", "GET /v1/runs/%ZZ HTTP/1.1\r\nHost: localhost\r\n\r\n", 400},
		{"garbage request line", "NOT-HTTP\r\n\r\n", 400},
		{"missing Host", "GET /healthz HTTP/1.1\r\n\r\n", 400},
		{"headers too large", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431},
		{"unsupported version", "GET /healthz HTTP/2.5\r\nHost: localhost\r\n\r\n", 505},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := rawRequest(t, addr, tc.raw)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q, want application/problem+json", ct)
			}
			var p gen.Problem
			body, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("body %q is not a problem document: %v", body, err)
			}
			if p.Status != tc.status || p.Title != http.StatusText(tc.status) || p.Detail == nil || *p.Detail == "" {
				t.Fatalf("problem %+v does not describe status %d", p, tc.status)
			}
			if strings.Contains(string(body), "%ZZ") || strings.Contains(string(body), "a b") {
				t.Fatalf("the problem echoes the request: %s", body)
			}
		})
	}

	// A well-formed request on the same listener is untouched.
	resp := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid request got %d", resp.StatusCode)
	}
}
