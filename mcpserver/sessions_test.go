package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/tools"
)

// clientHeader is the test's way to make requests come from many client
// addresses: the test server's middleware takes it as the remote address.
const clientHeader = "X-Test-Client"

// serveHTTP serves the built-in tools (no workspace) at /mcp the way
// `specloop serve` does, with opts, and returns its URL.
func serveHTTP(t *testing.T, opts mcpserver.HTTPOptions) string {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(rt, mcpserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := mcpserver.NewHTTPHandler(srv, opts)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := r.Header.Get(clientHeader); c != "" {
			r.RemoteAddr = c + ":1234"
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// initialize starts a session from client and returns the response's
// status, session id and body.
func initialize(t *testing.T, url, client string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(clientHeader, client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(body)
}

// end ends a session (DELETE /mcp).
func end(t *testing.T, url, client, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set(clientHeader, client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func wantRefusal(t *testing.T, status int, id, body, what string) {
	t.Helper()
	if status != http.StatusTooManyRequests || id != "" {
		t.Fatalf("%s: status %d, session %q; want 429 and no session", what, status, id)
	}
	var p gen.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.Status != http.StatusTooManyRequests || p.Detail == nil || !strings.Contains(*p.Detail, "MCP sessions") {
		t.Fatalf("%s: body %q; want a problem document saying why", what, body)
	}
}

// /mcp sessions were uncapped (3,000 in 4 s, each kept 30 min): now at most
// DefaultMaxSessions in all and DefaultMaxSessionsPerClient from one
// client address; beyond, a new session's initialize is a 429 problem, and
// ending a session frees its place.
func TestSessionCaps(t *testing.T) {
	url := serveHTTP(t, mcpserver.HTTPOptions{})
	per, all := mcpserver.DefaultMaxSessionsPerClient, mcpserver.DefaultMaxSessions
	ids := map[string][]string{}
	for i := range all {
		client := fmt.Sprintf("10.0.0.%d", i/per)
		status, id, body := initialize(t, url, client)
		if status != http.StatusOK || id == "" {
			t.Fatalf("session %d of %d (client %s): status %d, session %q: %s", i+1, all, client, status, id, body)
		}
		ids[client] = append(ids[client], id)
	}
	status, id, body := initialize(t, url, "10.0.1.1")
	wantRefusal(t, status, id, body, "a session over the cap in all")
	status, id, body = initialize(t, url, "10.0.0.0")
	wantRefusal(t, status, id, body, "a session over a client's cap")

	if s := end(t, url, "10.0.0.0", ids["10.0.0.0"][0]); s != http.StatusNoContent {
		t.Fatalf("DELETE: %d", s)
	}
	if status, id, body := initialize(t, url, "10.0.0.0"); status != http.StatusOK || id == "" {
		t.Fatalf("after ending a session: status %d, session %q: %s", status, id, body)
	}
}

// The per-client cap counts one client's sessions only.
func TestSessionCapPerClient(t *testing.T) {
	url := serveHTTP(t, mcpserver.HTTPOptions{MaxSessionsPerClient: 2})
	for range 2 {
		if status, _, body := initialize(t, url, "10.0.0.1"); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	status, id, body := initialize(t, url, "10.0.0.1")
	wantRefusal(t, status, id, body, "a third session of one client")
	if status, _, body := initialize(t, url, "10.0.0.2"); status != http.StatusOK {
		t.Fatalf("another client: status %d: %s", status, body)
	}
}

// A session left idle for SessionTimeout is closed, and its place freed.
func TestIdleSessionExpires(t *testing.T) {
	url := serveHTTP(t, mcpserver.HTTPOptions{MaxSessionsPerClient: 1, SessionTimeout: 50 * time.Millisecond})
	status, first, body := initialize(t, url, "10.0.0.1")
	if status != http.StatusOK || first == "" {
		t.Fatalf("status %d: %s", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, id, _ := initialize(t, url, "10.0.0.1")
		if status == http.StatusOK && id != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an idle session's place was not freed: %d", status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := end(t, url, "10.0.0.1", first); s != http.StatusNotFound {
		t.Fatalf("DELETE of the expired session: %d, want 404", s)
	}
}
