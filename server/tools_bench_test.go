package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// BenchmarkToolCall is one POST /v1/tools/read_file in a workspace, over
// loopback: what a direct tool call costs the server besides the tool.
//
//	go test ./server -run '^$' -bench BenchmarkToolCall
func BenchmarkToolCall(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ws"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ws", "a.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Token: testToken, Config: runner.Config{DataDir: b.TempDir(), WorkspaceRoot: root}})
	if err != nil {
		b.Fatal(err)
	}
	hs := serveHTTP(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	url := hs.URL + "/v1/tools/read_file?workspace=ws"
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"path":"a.txt"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
