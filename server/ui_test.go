package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/webui"
)

// uiGet sends a GET without a token (the page's files need none) with
// the given Host, and does not follow redirects.
func uiGet(t *testing.T, base, host, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestUIRoute: the page is served at /ui/ without a token and with its
// CSP, /ui redirects there, the API behind it still needs the token, and
// without a token the Host check guards the page as it guards the API.
func TestUIRoute(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	resp, body := uiGet(t, ts.http.URL, "", server.UIPath)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `src="app.js"`) || resp.Header.Get("Content-Security-Policy") != webui.CSP {
		t.Errorf("GET %s: %d CSP %q %.100s", server.UIPath, resp.StatusCode, resp.Header.Get("Content-Security-Policy"), body)
	}
	if resp, _ := uiGet(t, ts.http.URL, "", server.UIPath+"app.js"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("GET app.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp, _ := uiGet(t, ts.http.URL, "", strings.TrimSuffix(server.UIPath, "/")); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != server.UIPath {
		t.Errorf("GET /ui: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := uiGet(t, ts.http.URL, "", "/v1/runs"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/runs without the token: %d", resp.StatusCode)
	}
	// Routes beside the page are not opened by it.
	if resp, _ := uiGet(t, ts.http.URL, "", "/uix"); resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /uix: %d", resp.StatusCode)
	}

	base := startNoToken(t, server.Config{})
	if resp, _ := uiGet(t, base, "", server.UIPath); resp.StatusCode != http.StatusOK {
		t.Errorf("no token, loopback: %d", resp.StatusCode)
	}
	if resp, body := uiGet(t, base, "evil.example", server.UIPath); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "script") {
		t.Errorf("no token, Host evil.example: %d %.100s", resp.StatusCode, body)
	}
}
