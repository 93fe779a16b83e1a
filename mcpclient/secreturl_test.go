package mcpclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/mcpclient"
)

// An MCP server's URL may carry a credential (https://host/mcp?key=...,
// as hosted servers hand them out). A call that fails must not show it
// to the model, whose observations reach the trace and the provider.
func TestFailedCallKeepsTheURLsSecret(t *testing.T) {
	t.Parallel()
	const secret = "sk-url-secret-0123456789"
	srv := testServer(nil, nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	rt := open(t, mcpclient.Server{Name: "ext", URL: ts.URL + "/mcp?key=" + secret}, mcpclient.Config{CallTimeout: 10 * time.Second})
	ts.CloseClientConnections()
	ts.Close()
	obs := call(t, rt, "ext__echo", map[string]any{"text": "a"})
	if !obs.IsError {
		t.Fatalf("a call to a closed server succeeded: %q", obs.Content)
	}
	if strings.Contains(obs.Content, secret) {
		t.Fatalf("the observation shows the server URL's credential: %q", obs.Content)
	}
}

// Neither does the error of a server that cannot be reached at all,
// which a run's setup reports and the server logs.
func TestConnectErrorKeepsTheURLsSecret(t *testing.T) {
	t.Parallel()
	const secret = "sk-url-secret-0123456789"
	ts := httptest.NewServer(http.NotFoundHandler())
	addr := ts.Listener.Addr().String()
	ts.Close()
	for _, u := range []string{
		"http://" + addr + "/mcp?key=" + secret,
		"http://user:" + secret + "@" + addr + "/mcp",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := mcpclient.Open(ctx, base(t), []mcpclient.Server{{Name: "ext", URL: u}}, mcpclient.Config{})
		cancel()
		if err == nil {
			t.Fatal("connecting to a closed address succeeded")
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the server URL's credential: %v", err)
		}
	}
}
