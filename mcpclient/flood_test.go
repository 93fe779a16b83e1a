package mcpclient_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
)

// A streamable HTTP server's answer to a call is read whole by the SDK
// before anything is clipped: one that answers more than
// MaxResponseBytes fails the call instead of filling the memory.
func TestFloodingHTTPServerIsCut(t *testing.T) {
	t.Parallel()
	real := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer(nil, nil) }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			real.ServeHTTP(w, r)
			return
		}
		// A well-formed answer, far over the cap.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
		chunk := strings.Repeat("x", 1<<20)
		for range mcpclient.MaxResponseBytes>>20 + 4 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, `"}]}}`)
	}))
	t.Cleanup(ts.Close)
	rt := open(t, mcpclient.Server{Name: "ext", URL: ts.URL}, mcpclient.Config{})
	obs := call(t, rt, "ext__echo", map[string]any{"text": "a"})
	if !obs.IsError || obs.ErrorCode == nil || *obs.ErrorCode != gen.ErrorCodeMcpUnavailable {
		t.Fatalf("a %d MiB answer gave error %v and %d bytes of content, want %s", mcpclient.MaxResponseBytes>>20+4, obs.ErrorCode, len(obs.Content), gen.ErrorCodeMcpUnavailable)
	}
}
