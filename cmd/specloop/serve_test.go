package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
)

// startServe runs `specloop serve` in-process on a free loopback port and
// returns its URL; the server stops (gracefully) at the end of the test.
func startServe(t *testing.T, args ...string) (url string, stderr *logTail) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr = &logTail{}
	done := make(chan int, 1)
	base := []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", t.TempDir()}
	go func() {
		done <- run(ctx, append(base, args...), strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			stderr.add(line)
			if m := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(line); m != nil {
				urls <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d:\n%s", code, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	select {
	case url = <-urls:
	case code := <-done:
		t.Fatalf("serve exited %d:\n%s", code, stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start:\n%s", stderr)
	}
	return url, stderr
}

// logTail collects log lines.
type logTail struct {
	lines []string
	mu    chan struct{}
}

func (l *logTail) add(s string) {
	l.lock()
	defer l.unlock()
	l.lines = append(l.lines, s)
}

func (l *logTail) String() string {
	l.lock()
	defer l.unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logTail) lock() {
	if l.mu == nil {
		l.mu = make(chan struct{}, 1)
	}
	l.mu <- struct{}{}
}

func (l *logTail) unlock() { <-l.mu }

func TestServeHelp(t *testing.T) {
	code, _, stderr := specloop(t, "serve", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--addr", "--data", "--workspace-root", "--max-concurrent", "--queue", "--token-file", "--allow-commands", "--insecure", "SPECLOOP_TOKEN", "interrupted",
		"--allowed-host", "--read-timeout", "--max-connections", "--max-streams", "--max-streams-per-client", "0700"} {
		if !strings.Contains(stderr, strings.TrimPrefix(want, "-")) {
			t.Errorf("serve -h does not mention %s", want)
		}
	}
}

// TestServeRefusesOpenAddress: no token on a non-loopback address is a
// usage error unless --insecure is given.
func TestServeRefusesOpenAddress(t *testing.T) {
	t.Setenv(cli.TokenEnv, "")
	code, _, stderr := specloop(t, "serve", "--addr", "0.0.0.0:0", "--data", t.TempDir(), "--workspace-root", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "refusing") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestServeAllowedHost: a token-less server answers loopback names and
// the --allowed-host names only, so a page cannot reach it by DNS
// rebinding; a malformed name is a usage error.
func TestServeAllowedHost(t *testing.T) {
	t.Setenv(cli.TokenEnv, "")
	url, _ := startServe(t, "--allowed-host", "agent.internal", "--allowed-host", "Second.Example", "--max-streams", "8")
	for host, want := range map[string]int{
		"localhost":           http.StatusOK,
		"agent.internal":      http.StatusOK,
		"second.example:8080": http.StatusOK,
		"rebound.example":     http.StatusForbidden,
	} {
		req, err := http.NewRequest(http.MethodGet, url+"/v1/tools", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	code, _, stderr := specloop(t, "serve", "--allowed-host", "a/b", "--data", t.TempDir(), "--workspace-root", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "allowed-host") {
		t.Fatalf("a malformed --allowed-host: exit %d: %s", code, stderr)
	}
}

// TestServeSystemFile: a --system-file the server cannot use stops it
// before it listens.
func TestServeSystemFile(t *testing.T) {
	t.Setenv(cli.TokenEnv, "")
	code, _, stderr := specloop(t, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workspace-root", t.TempDir(), "--system-file", filepath.Join(t.TempDir(), "none.md"))
	if code != exitUsage || !strings.Contains(stderr, "--system-file") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestServeRecordsDefault: started where it serves (--workspace-root .),
// with no --data, serve keeps its run records in the user's state
// directory, 0700, and none in the workspace root, where runs could read
// and forge them. Before the fix they went to ./specloop-data.
func TestServeRecordsDefault(t *testing.T) {
	for _, xdg := range []bool{true, false} {
		t.Run(map[bool]string{true: "XDG_STATE_HOME", false: "HOME"}[xdg], func(t *testing.T) {
			home, state, work := t.TempDir(), t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			want := filepath.Join(home, ".local", "state", "specloop", "server")
			if xdg {
				t.Setenv("XDG_STATE_HOME", state)
				want = filepath.Join(state, "specloop", "server")
			} else {
				t.Setenv("XDG_STATE_HOME", "")
			}
			t.Chdir(work)
			url, _ := startServe(t, "--data", "", "--workspace-root", ".")
			resp, err := http.Get(url + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if _, err := os.Stat(filepath.Join(want, "runs.jsonl")); err != nil {
				t.Errorf("the run log is not in the state directory: %v", err)
			}
			for _, d := range []string{want, filepath.Dir(want)} {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v %v, want mode 700", d, fi, err)
				}
			}
			entries, err := os.ReadDir(work)
			if err != nil || len(entries) != 0 {
				t.Errorf("the workspace root holds %v (%v), want nothing", entries, err)
			}
		})
	}
}

// TestRecordsInWorkspaceRootRefused: a --data or --store inside the
// workspace root (or containing it), given or by default, is refused at
// start with a message that names both flags. Before the fix serve started,
// and a run could forge the run log.
func TestRecordsInWorkspaceRootRefused(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"serve --data inside", []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(root, "specloop-data"), "--workspace-root", root}, "--data"},
		{"serve --data is the root", []string{"serve", "--addr", "127.0.0.1:0", "--data", root, "--workspace-root", root}, "--data"},
		{"serve --data contains the root", []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Dir(root), "--workspace-root", root}, "--data"},
		{"serve default --data inside", []string{"serve", "--addr", "127.0.0.1:0", "--workspace-root", root}, "--data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := specloop(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.flag+" ") || !strings.Contains(stderr, "--workspace-root") || !strings.Contains(stderr, "outside") {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
		})
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("a refused directory was created: %v %v", entries, err)
	}
}

// TestTemporalPointsToItsCommand: the Temporal engine is specloop-temporal's;
// what used to start it here is a one-line usage error that names the
// command to run instead, not an unknown flag or command. serve keeps
// --engine embedded.
func TestTemporalPointsToItsCommand(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "--temporal-address", "127.0.0.1:7233", "--workspace-root", "."},
		{"worker"},
		{"help", "worker"},
		{"serve", "--engine", "temporal", "--temporal-address", "127.0.0.1:7233", "--store", "/shared/store"},
		{"serve", "--addr", "127.0.0.1:0", "-engine=temporal"},
	} {
		code, stdout, stderr := specloop(t, args...)
		want := "specloop-temporal " + args[0]
		if args[0] == "help" {
			want = "specloop-temporal worker"
		}
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "`"+want+"`") ||
			!strings.Contains(stderr, "go install github.com/specloop/specloop/cmd/specloop-temporal@latest") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := specloop(t, "serve", "--engine", "embedded", "-h"); code != exitOK || !strings.Contains(stderr, "specloop-temporal serve") {
		t.Errorf("serve --engine embedded -h: exit %d: %s", code, stderr)
	}
	if code, _, stderr := specloop(t, "serve", "--engine", "elsewhere"); code != exitUsage || !strings.Contains(stderr, "the engine must be embedded") {
		t.Errorf("serve --engine elsewhere: exit %d: %s", code, stderr)
	}
}

// TestServeCloneHosts: --clone-hosts lets runs name repositories of those
// hosts by URL; a repo_url of another host, or any on a server without
// the flag, is a 400 naming /repo_url; a malformed list is a usage error.
func TestServeCloneHosts(t *testing.T) {
	t.Setenv(cli.TokenEnv, "")
	post := func(url, repoURL string) (int, string) {
		t.Helper()
		body := `{"task":{"prompt":"p"},"model":{"provider":"script","responses":["{\"type\":\"finish\",\"answer\":\"a\"}"]},"isolation":"worktree","repo_url":"` + repoURL + `"}`
		resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	with, _ := startServe(t, "--clone-hosts", "git.example.org:8443,example.com")
	without, _ := startServe(t)
	for _, c := range []struct{ url, repo, says string }{
		{with, "https://elsewhere.example/r.git", "not one this server clones from"},
		{with, "file:///etc", "not an https URL"},
		{with, "https://u:pw@example.com/r.git", "password"},
		{without, "https://example.com/r.git", "--clone-hosts"},
	} {
		if code, body := post(c.url, c.repo); code != http.StatusBadRequest || !strings.Contains(body, "/repo_url") || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s", c.repo, code, body)
		}
	}
	code, _, stderr := specloop(t, "serve", "--clone-hosts", "https://example.com", "--data", t.TempDir(), "--workspace-root", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "clone-hosts") {
		t.Fatalf("a malformed --clone-hosts: exit %d: %s", code, stderr)
	}
}
