package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/server"
)

// TestCrossOriginRefused: a web page of another site cannot make a
// token-less loopback server change anything (cancel a run, start one,
// decide an approval): a state-changing request that a browser marks
// cross-site (Sec-Fetch-Site), or whose Origin is not the server's, gets
// 403; same-origin requests (the web page at /ui) and requests without
// those headers (curl, the SDK) pass, and so does every GET. Before the
// fix the cross-site cancel and create were served.
func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	base := startNoToken(t, server.Config{})
	host := strings.TrimPrefix(base, "http://")
	send := func(method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Content-Type")
	}
	create := `{"task":{"prompt":"p"},"model":{"provider":"script","responses":["{\"type\":\"finish\",\"answer\":\"a\"}"]}}`
	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"Sec-Fetch-Site cross-site", []string{"Sec-Fetch-Site", "cross-site"}},
		{"Sec-Fetch-Site same-site", []string{"Sec-Fetch-Site", "same-site"}},
		{"a foreign Origin", []string{"Origin", "https://evil.example"}},
		{"a foreign Origin on the same host name", []string{"Origin", "http://" + strings.Split(host, ":")[0] + ":1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct{ method, path, body string }{
				{http.MethodPost, "/v1/runs/abc/cancel", ""},
				{http.MethodPost, "/v1/runs", create},
				{http.MethodPost, "/v1/runs/abc/approvals/c1", `{"approve":true}`},
			} {
				if code, ct := send(r.method, r.path, r.body, tc.header...); code != http.StatusForbidden || ct != "application/problem+json" {
					t.Errorf("%s %s: %d %s, want 403 problem+json", r.method, r.path, code, ct)
				}
			}
			if code, _ := send(http.MethodGet, "/healthz", "", tc.header...); code != http.StatusOK {
				t.Errorf("GET /healthz: %d", code)
			}
		})
	}
	// Nothing was created by the refused requests.
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/runs", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_, _ = bufCopy(&b, resp)
	if strings.Contains(b.String(), `"id"`) {
		t.Errorf("a refused create made a run: %s", b.String())
	}
	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"no headers (curl, the SDK)", nil},
		{"Sec-Fetch-Site same-origin (the web page)", []string{"Sec-Fetch-Site", "same-origin"}},
		{"Sec-Fetch-Site none (typed by the user)", []string{"Sec-Fetch-Site", "none"}},
		{"the server's own Origin", []string{"Origin", base}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _ := send(http.MethodPost, "/v1/runs/abc/cancel", "", tc.header...); code != http.StatusNotFound {
				t.Errorf("cancel of an unknown run: %d, want 404", code)
			}
			if code, _ := send(http.MethodPost, "/v1/runs", create, tc.header...); code != http.StatusAccepted {
				t.Errorf("create: %d, want 202", code)
			}
		})
	}
}

func bufCopy(b *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	var buf [4096]byte
	var n int64
	for {
		k, err := resp.Body.Read(buf[:])
		b.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}
