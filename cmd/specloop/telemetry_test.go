package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServeMetricsAddr: the API's /metrics needs the token; --metrics-addr
// serves the same metrics without it on its own listener.
func TestServeMetricsAddr(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "serve-metrics-token-0123"
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	url, stderr := startServe(t, "--token-file", tokenFile, "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics_addr=(\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", stderr)
	}
	if status, body := get(t, url+"/metrics", ""); status != http.StatusUnauthorized {
		t.Errorf("the API's /metrics without the token: %d %s", status, body)
	}
	if status, body := get(t, url+"/metrics", token); status != http.StatusOK || !strings.Contains(body, "specloop_runs_total") {
		t.Errorf("the API's /metrics with the token: %d %.200s", status, body)
	}
	status, body := get(t, "http://"+m[1]+"/metrics", "")
	if status != http.StatusOK || !strings.Contains(body, `specloop_http_requests_total{operation="getMetrics",status="401"} 1`) {
		t.Errorf("--metrics-addr /metrics: %d %.2000s", status, body)
	}
}

// collector is an OTLP/HTTP trace receiver: it keeps the span names.
type collector struct {
	mu    sync.Mutex
	names []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.names = append(c.names, s.GetName())
			}
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

// TestRunOTel: a local run with OTEL_EXPORTER_OTLP_ENDPOINT set sends its
// spans to that collector before the command returns.
func TestRunOTel(t *testing.T) {
	c := &collector{}
	hs := httptest.NewServer(c)
	defer hs.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"run", "--script", "testdata/calculator.script", "--workspace", t.TempDir(), "--no-commands", "Compute 12 x 7."},
		strings.NewReader(""), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("run exited %d: %s", code, stderr.String())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.Sort(c.names)
	want := []string{"chat", "chat", "execute_tool calculator", "invoke_agent"}
	if !slices.Equal(c.names, want) {
		t.Errorf("the collector got spans %v, want %v", c.names, want)
	}
}

// TestOTelContentNeedsTracing: --otel-content alone is a usage error.
func TestOTelContentNeedsTracing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"run", "--script", "testdata/calculator.script", "--otel-content", "Compute."},
		strings.NewReader(""), io.Discard, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--otel-content needs tracing") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeMetricsAddrBeyondLoopback: a --metrics-addr that other hosts
// can reach serves the metrics to anyone without a token; serve says so
// where the operator sees it.
func TestServeMetricsAddrBeyondLoopback(t *testing.T) {
	_, stderr := startServe(t, "--metrics-addr", "0.0.0.0:0")
	log := stderr.String()
	if !regexp.MustCompile(`level=WARN msg=".*not a loopback address.*metrics_addr=`).MatchString(log) {
		t.Errorf("no warning that the metrics are served beyond loopback without a token:\n%s", log)
	}
	_, stderr = startServe(t, "--metrics-addr", "127.0.0.1:0")
	if strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("a loopback --metrics-addr is warned about:\n%s", stderr)
	}
}

// TestServeMetricsAddrRefusesRebinding: a page on another origin that
// rebinds its own name to 127.0.0.1 reaches a loopback --metrics-addr with
// its own name as the Host; the token-less listener answers only to
// loopback names and --allowed-host names, as the API does without a token.
func TestServeMetricsAddrRefusesRebinding(t *testing.T) {
	_, stderr := startServe(t, "--metrics-addr", "127.0.0.1:0", "--allowed-host", "metrics.internal")
	m := regexp.MustCompile(`metrics_addr=(\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", stderr)
	}
	for host, want := range map[string]int{
		"evil.example":     http.StatusForbidden,
		"evil.example:80":  http.StatusForbidden,
		"localhost":        http.StatusOK,
		m[1]:               http.StatusOK,
		"metrics.internal": http.StatusOK,
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+m[1]+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
		if want == http.StatusForbidden && strings.Contains(string(body), "specloop_") {
			t.Errorf("Host %s: the metrics were served", host)
		}
	}
}

// TestMetricsAddrIdleSockets: sockets that sit open on --metrics-addr
// without sending (the listener's whole connection cap of them, and more)
// never hold a scrape up: it is answered while they stay open. Before the
// fix the scrape waited for one of them to time out (10 s each).
func TestMetricsAddrIdleSockets(t *testing.T) {
	t.Parallel()
	_, stderr := startServe(t, "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics_addr=(\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address logged:\n%s", stderr)
	}
	const n = cli.MaxMetricsConns + 4
	var idle []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", m[1], 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		idle = append(idle, c)
	}
	// A scraper that keeps its connection alive between scrapes, as
	// Prometheus does, scrapes twice; a hang guard, not a timing.
	c := &http.Client{Timeout: 30 * time.Second}
	for i := range 2 {
		t0 := time.Now()
		resp, err := c.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d with %d idle sockets open: %v", i, cli.MaxMetricsConns+4, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "specloop_") {
			t.Fatalf("scrape %d: %d", i, resp.StatusCode)
		}
		t.Logf("scrape %d answered in %v", i, time.Since(t0))
	}
	// The scrapes were answered while the idle sockets sat open: at the
	// cap a new connection closes the oldest idle one (here 4 + 1 of
	// them), rather than waiting for the sockets to time out, as the
	// whole cap's worth of them did before the fix.
	open := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var b [1]byte
		_, err := c.Read(b[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	if open < n-6 {
		t.Errorf("%d of the %d idle sockets are still open after the scrapes: the scrape waited for them to time out", open, n)
	}
}
