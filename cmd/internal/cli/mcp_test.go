package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/wiring"
)

// The /mcp handler `serve` mounts caps the sessions of one client: the
// one past mcpserver.DefaultMaxSessionsPerClient is refused with 429
// rather than kept for minutes like the others.
func TestServeMCPHandlerCapsSessions(t *testing.T) {
	h, stop, setup, err := mcpHandler(wiring.Config{Dir: t.TempDir(), DisableCommands: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	defer stop()
	ts := httptest.NewServer(h)
	defer ts.Close()
	initialize := func() int {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range mcpserver.DefaultMaxSessionsPerClient {
		if s := initialize(); s != http.StatusOK {
			t.Fatalf("session %d: status %d", i+1, s)
		}
	}
	if s := initialize(); s != http.StatusTooManyRequests {
		t.Fatalf("one session past the cap: status %d, want 429", s)
	}
}
