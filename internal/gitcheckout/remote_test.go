package gitcheckout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/gitcheckout/githttps"
)

// newRepo makes a repository with one commit and returns it and the
// commit's hash.
func newRepo(t *testing.T) (string, string) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	if err := exec.Command("git", "init", "-q", repo).Run(); err != nil {
		t.Skip("no git")
	}
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	return repo, commit(t, repo, "one")
}

func commit(t *testing.T, repo, msg string) string {
	t.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", msg}} {
		cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-c", "core.hooksPath=/dev/null", "-C", repo}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// Only https://HOST/PATH URLs pass CheckHTTPS: each refused one is an
// attack on the machine that clones it (a local file, a transport that
// runs a program, credentials in the URL, another protocol).
func TestCheckHTTPSRefusesAttacks(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"file:///etc", "file://localhost/srv/repo.git", "/srv/repo.git", "../repo", "repo", ".",
		"ssh://git@example.com/r.git", "git@example.com:r.git", "git://example.com/r.git", "http://example.com/r.git",
		"ext::sh -c touch% /tmp/pwned", "fd::3", "https::ext::sh", "https::https://example.com/r.git", "EXT::sh",
		"https://user:secret@example.com/r.git", "https://user:@example.com/r.git",
		"https://example.com", "https://example.com/", "https:///r.git", "https:r.git",
		"https://example.com/r.git?x=1", "https://example.com/r.git#frag", "https://example.com/r .git", "https://example.com/r\n.git",
		"HTTPS://example.com/r.git-- --upload-pack=x", "-uhttps://example.com/r.git",
	} {
		if _, err := gitcheckout.CheckHTTPS(bad); err == nil {
			t.Errorf("CheckHTTPS(%q) passed", bad)
		}
	}
	for _, good := range []string{"https://example.com/r.git", "https://git@example.com:8443/group/r", "https://Example.COM/r/", "https://[::1]:8443/r.git", "https://example.com/a::b"} {
		if _, err := gitcheckout.CheckHTTPS(good); err != nil {
			t.Errorf("CheckHTTPS(%q): %v", good, err)
		}
	}
}

// A clone over https works, is bare with no hooks, and a fetch brings a
// later commit.
func TestCloneRemote(t *testing.T) {
	t.Parallel()
	srv := githttps.Start(t)
	repo, first := newRepo(t)
	u := srv.Publish(t, "r", repo)
	r := gitcheckout.Remote{CAFile: srv.CAFile}
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "cache", "r.git")
	if err := r.CloneRemote(ctx, u, dst); err != nil {
		t.Fatal(err)
	}
	if h, err := r.Resolve(ctx, dst, "HEAD"); err != nil || h != first {
		t.Fatalf("Resolve(HEAD) = %q, %v, want %s", h, err, first)
	}
	if ents, _ := os.ReadDir(filepath.Join(dst, "hooks")); len(ents) != 0 {
		t.Errorf("the clone has hooks: %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 1 {
		t.Errorf("the cache holds %d entries, want the clone alone", len(ents))
	}
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("two\n"), 0o644)
	second := commit(t, repo, "two")
	srv.Publish(t, "r", repo)
	if _, err := r.Resolve(ctx, dst, second); err == nil {
		t.Fatal("the new commit is in the clone before a fetch")
	}
	if err := r.FetchRemote(ctx, u, dst, second); err != nil {
		t.Fatal(err)
	}
	if h, err := r.Resolve(ctx, dst, second); err != nil || h != second {
		t.Errorf("after the fetch Resolve = %q, %v", h, err)
	}
	// A clone into a cache entry that exists already keeps it.
	if err := r.CloneRemote(ctx, u, dst); err != nil {
		t.Errorf("a second clone to the same place: %v", err)
	}
}

// A redirect is not followed, to another host or any: the allow-list of
// hosts is checked on the URL git is given.
func TestCloneRemoteFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	srv := githttps.Start(t)
	repo, _ := newRepo(t)
	target := srv.Publish(t, "r", repo)
	redirect := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+strings.TrimPrefix(r.URL.Path, "/moved.git")+"?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer redirect.Close()
	// Both servers share httptest's certificate, so the CA file trusts both.
	r := gitcheckout.Remote{CAFile: srv.CAFile}
	before := srv.Requests()
	err := r.CloneRemote(context.Background(), redirect.URL+"/moved.git", filepath.Join(t.TempDir(), "r.git"))
	if err == nil {
		t.Fatal("the clone followed a redirect to another host")
	}
	if srv.Requests() != before {
		t.Errorf("git reached the host it was redirected to (%d requests)", srv.Requests()-before)
	}
}

// No credential helper, configuration or .netrc of the machine's is
// used: a server that wants a password gets none, and the helper never
// runs.
func TestCloneRemoteAsksNoCredentialHelper(t *testing.T) {
	home := t.TempDir()
	marker := filepath.Join(home, "asked")
	cfg := "[credential]\n\thelper = \"!f() { touch " + marker + "; echo username=u; echo password=p; }; f\"\n"
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o600)
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("default login u password netrc-secret\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://u:store-secret@127.0.0.1\n"), 0o600)
	var sent atomic.Bool
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_ASKPASS", "/bin/false")
	auth := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sent.Store(true)
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer auth.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	srv := githttps.Start(t) // only for its CA file: httptest's servers share a certificate
	data, _ := os.ReadFile(srv.CAFile)
	os.WriteFile(ca, data, 0o600)
	err := gitcheckout.Remote{CAFile: ca}.CloneRemote(context.Background(), auth.URL+"/r.git", filepath.Join(t.TempDir(), "r.git"))
	if err == nil {
		t.Fatal("the clone of a server that wants a password succeeded")
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("the machine's credential helper was asked")
	}
	if sent.Load() {
		t.Error("git sent credentials of the machine's (its .netrc, a helper's)")
	}
}

// The refused URLs are refused by CloneRemote itself, before git runs.
func TestCloneRemoteRefusesWhatCheckHTTPSRefuses(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, bad := range []string{"ext::sh -c touch% " + marker, "file://" + t.TempDir(), t.TempDir()} {
		if err := (gitcheckout.Remote{}).CloneRemote(context.Background(), bad, filepath.Join(t.TempDir(), "r.git")); err == nil {
			t.Errorf("CloneRemote(%q) succeeded", bad)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the ext:: transport ran its command")
	}
}
