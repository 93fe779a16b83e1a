package gitcheckout

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Remote is how git reaches the repositories a server clones for the
// runs that name them by URL (someone else's URL, so nothing of this
// machine's git configuration, credentials or environment is used).
type Remote struct {
	// CAFile, when set, is the PEM file of the certificate authorities
	// git trusts instead of the system's (GIT_SSL_CAINFO): tests set it
	// for their own https server; no flag or environment does.
	CAFile string
}

// remoteConfig is the configuration every git command on a remote clone
// runs with, on top of none of the machine's: only https, no redirect,
// no credential helper, no hooks, no automatic gc (another run may be
// reading the objects), no submodules.
var remoteConfig = []string{
	"core.hooksPath=/dev/null", "core.fsmonitor=false", "core.askPass=",
	"protocol.allow=never", "protocol.https.allow=always",
	"http.followRedirects=false", "credential.helper=",
	"gc.auto=0", "maintenance.auto=false",
	"submodule.recurse=false", "fetch.recurseSubmodules=false",
}

// proxyVars are the only variables of the process's environment git gets
// on a remote clone: the proxy the machine reaches the network through.
var proxyVars = []string{"https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"}

// run runs git for a remote clone, in dir, in an environment built from
// scratch: no system or global configuration, no terminal prompt, no
// askpass, only the https transport. The error holds the end of what git
// printed.
func (r Remote) run(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	var full []string
	for _, c := range remoteConfig {
		full = append(full, "-c", c)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = r.env()
	return output(cmd, args[0])
}

// env is git's environment on a remote clone, built from scratch.
func (r Remote) env() []string {
	// HOME is no directory, so that nothing there is read: no
	// configuration, and no .netrc, whose passwords curl would send.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/dev/null", "XDG_CONFIG_HOME=/dev/null", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL=https", "GIT_PROTOCOL_FROM_USER=0", "GIT_NO_REPLACE_OBJECTS=1"}
	for _, name := range proxyVars {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	if r.CAFile != "" {
		env = append(env, "GIT_SSL_CAINFO="+r.CAFile)
	}
	return env
}

// CheckHTTPS says why rawURL is not a URL a remote clone reaches, or
// nil: it must be https://HOST/PATH, with no password, query, fragment,
// white space or control character, and nothing git reads as another
// transport ("::").
func CheckHTTPS(rawURL string) (*url.URL, error) {
	if strings.ContainsFunc(rawURL, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, errors.New("holds white space or a control character")
	}
	if transport(rawURL) {
		return nil, errors.New("names a git transport (::), which may run a program: only https URLs are cloned")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("is not a URL")
	}
	switch {
	case u.Scheme != "https":
		return nil, errors.New("is not an https URL (https://HOST/PATH): file, ssh, git and http URLs, local paths and other transports are refused")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, errors.New("names no host (https://HOST/PATH)")
	case u.User != nil && hasPassword(u.User):
		return nil, errors.New("holds a password: credentials never go in a URL")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errors.New("has a query or a fragment, which a repository's URL has not")
	case strings.Trim(u.Path, "/") == "":
		return nil, errors.New("names no repository on its host (https://HOST/PATH)")
	}
	return u, nil
}

// transport says whether git reads rawURL as TRANSPORT::ADDRESS, which
// hands it to a remote helper (ext:: runs a command): scheme characters
// from the start, then "::".
func transport(rawURL string) bool {
	i := strings.IndexFunc(rawURL, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')
	})
	return i >= 0 && strings.HasPrefix(rawURL[i:], "::")
}

func hasPassword(u *url.Userinfo) bool {
	_, set := u.Password()
	return set
}

// CloneRemote clones rawURL (CheckHTTPS), bare and with no template (so
// no hooks), into dst, which must not exist: it clones into a directory
// beside dst and renames it into place, so that a clone stopped halfway
// leaves nothing at dst, and of two processes cloning at once one wins
// and the other's clone is dropped.
func (r Remote) CloneRemote(ctx context.Context, rawURL, dst string) error {
	if _, err := CheckHTTPS(rawURL); err != nil {
		return fmt.Errorf("url %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".clone-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := r.run(ctx, tmp, "clone", "--quiet", "--bare", "--template=", "--no-recurse-submodules", "--", rawURL, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if _, serr := os.Stat(filepath.Join(dst, "HEAD")); serr == nil {
			return nil // cloned by another process meanwhile
		}
		return err
	}
	return nil
}

// FetchRemote fetches rawURL's branches and tags into repo, a clone
// CloneRemote made, and, when rev is a full hash none of them reaches,
// that commit.
func (r Remote) FetchRemote(ctx context.Context, rawURL, repo, rev string) error {
	if _, err := CheckHTTPS(rawURL); err != nil {
		return fmt.Errorf("url %w", err)
	}
	if _, err := r.run(ctx, repo, "fetch", "--quiet", "--no-recurse-submodules", "--", rawURL,
		"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"); err != nil {
		return err
	}
	if IsHash(rev) {
		if _, err := r.Resolve(ctx, repo, rev); err != nil {
			_, err = r.run(ctx, repo, "fetch", "--quiet", "--no-recurse-submodules", "--", rawURL, rev)
			return err
		}
	}
	return nil
}

// Resolve returns the hash of the commit rev names in repo, a clone
// CloneRemote made.
func (r Remote) Resolve(ctx context.Context, repo, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%q is not a revision", rev)
	}
	return r.run(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
}

// IsHash says whether rev is a full commit hash (SHA-1 or SHA-256).
func IsHash(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for _, c := range rev {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
