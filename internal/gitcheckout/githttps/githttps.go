// Package githttps serves git repositories over https in a test's own
// process (git http-backend behind httptest's TLS server), for the tests
// of what clones a URL.
package githttps

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Server serves the bare repositories under Root at URL/NAME.git.
type Server struct {
	*httptest.Server
	// Root holds the served repositories.
	Root string
	// CAFile is the PEM file of the server's certificate, for git's
	// GIT_SSL_CAINFO (gitcheckout.Remote.CAFile).
	CAFile string
	// Requests counts the requests served.
	Requests func() int
}

// Start serves the repositories under a new directory of t's; the test
// is skipped where git or git http-backend is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Dir: root,
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + root}, Stderr: io.Discard}
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemData, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Server{Server: srv, Root: root, CAFile: ca, Requests: func() int {
		return int(n.Load())
	}}
}

// Host is the server's host:port.
func (s *Server) Host() string { return strings.TrimPrefix(s.URL, "https://") }

// Publish serves a bare clone of the repository at repo as NAME.git and
// returns its URL; published again, the clone is fetched again.
func (s *Server) Publish(t testing.TB, name, repo string) string {
	t.Helper()
	dst := filepath.Join(s.Root, name+".git")
	args := []string{"clone", "-q", "--bare", "--", repo, dst}
	if _, err := os.Stat(dst); err == nil {
		args = []string{"-C", dst, "fetch", "-q", "--", repo, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}
	}
	cmd := exec.Command("git", append([]string{"-c", "core.hooksPath=/dev/null"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return s.URL + "/" + name + ".git"
}
