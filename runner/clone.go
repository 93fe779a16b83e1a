package runner

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/internal/wslock"
	"github.com/specloop/specloop/wiring"
)

// Cloner clones the repositories that isolated runs name by URL
// (CreateRunRequest.repo_url) into a clone cache, one bare clone per URL,
// which their work trees read their objects from. Only https URLs of the
// hosts in Hosts are cloned, and git runs with none of the machine's
// configuration, credentials or environment (gitcheckout.Remote).
type Cloner struct {
	// Dir is the clone cache. It must lie outside the workspace root,
	// which runs may write: a run could otherwise change the objects of
	// another run's work tree. New sets it to DATA/clones when empty.
	Dir string
	// Hosts are the hosts whose repositories are cloned: HOST (port 443)
	// or HOST:PORT, without case. None: every URL is refused.
	Hosts []string
	// Remote is how git reaches the hosts.
	Remote gitcheckout.Remote
}

// errNoClones is the answer to a repo_url on a server that clones none.
var errNoClones = badField("/repo_url", "this server clones no repositories: its operator allows hosts with specloop serve --clone-hosts")

// Check returns why rawURL is not a repository c clones (an *Error
// naming /repo_url), or nil; a nil c clones none.
func (c *Cloner) Check(rawURL string) error {
	_, err := c.check(rawURL)
	return err
}

func (c *Cloner) check(rawURL string) (*url.URL, error) {
	if c == nil || len(c.Hosts) == 0 {
		return nil, errNoClones
	}
	u, err := gitcheckout.CheckHTTPS(rawURL)
	if err != nil {
		return nil, badField("/repo_url", "%s", err)
	}
	if !c.allows(u) {
		return nil, badField("/repo_url", "its host is not one this server clones from (specloop serve --clone-hosts)")
	}
	return u, nil
}

// allows says whether u's host is in the allow-list: HOST for port 443
// (given or not), HOST:PORT for that port ([ADDRESS] for IPv6).
func (c *Cloner) allows(u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), cmp.Or(u.Port(), "443")
	return slices.ContainsFunc(c.Hosts, func(h string) bool {
		hh, hp, err := net.SplitHostPort(strings.ToLower(h))
		if err != nil {
			hh, hp = strings.Trim(strings.ToLower(h), "[]"), "443"
		}
		return hh == host && hp == port
	})
}

// cacheKey names the cache entry of u: a hash of the URL normalised
// (scheme and host in lower case, the port always, no trailing slash).
// The user name goes in escaped and the host in brackets when it is an
// IPv6 address, so that no two URLs of different users or hosts have one
// text (a user name holding "/" or "@", an IPv6 address ending in ":PORT").
func cacheKey(u *url.URL) string {
	host := net.JoinHostPort(strings.ToLower(u.Hostname()), cmp.Or(u.Port(), "443"))
	n := "https://" + host + "/" + strings.Trim(u.EscapedPath(), "/")
	if u.User != nil {
		n = "https://" + url.User(u.User.Username()).String() + "@" + n[len("https://"):]
	}
	sum := sha256.Sum256([]byte(n))
	return hex.EncodeToString(sum[:16]) + ".git"
}

// open checks the cache directory against the workspace root root and
// makes it (New).
func (c *Cloner) open(data, root string) error {
	if c.Dir == "" {
		c.Dir = filepath.Join(data, "clones")
	}
	if err := wiring.CheckRecordsDir(c.Dir, root); err != nil {
		return err
	}
	return os.MkdirAll(c.Dir, 0o700)
}

// lock holds the cache entry key until the returned func is called,
// against this process's other runs and every other process that shares
// the cache (an API server and its workers, two workers): a lock file in
// the cache's .locks directory.
func (c *Cloner) lock(ctx context.Context, key string) (func(), error) {
	l, err := wslock.Acquire(ctx, filepath.Join(c.Dir, ".locks"), key, nil)
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

// fetch returns the cache's clone of rawURL with rev in it and rev's
// commit hash: cloned the first time, fetched again when rev is a name
// (HEAD, a branch, a tag: it may have moved) or a hash not in it. One
// clone or fetch of a URL runs at a time; parallel runs wait for it.
// What cannot be is an *Error naming /repo_url or /commit.
func (c *Cloner) fetch(ctx context.Context, rawURL, rev string) (repo, hash string, err error) {
	u, err := c.check(rawURL)
	if err != nil {
		return "", "", err
	}
	if strings.HasPrefix(rev, "-") {
		return "", "", badField("/commit", "is not a revision")
	}
	if c.Dir == "" {
		return "", "", errors.New("the clone cache has no directory (Cloner.Dir)")
	}
	repo = filepath.Join(c.Dir, cacheKey(u))
	unlock, err := c.lock(ctx, filepath.Base(repo))
	if err != nil {
		return "", "", fmt.Errorf("lock the clone cache's entry: %w", err)
	}
	defer unlock()
	if _, serr := os.Stat(filepath.Join(repo, "HEAD")); errors.Is(serr, fs.ErrNotExist) {
		if err := c.Remote.CloneRemote(ctx, rawURL, repo); err != nil {
			return "", "", cloneProblem(ctx, err, rawURL)
		}
	} else if h, rerr := c.Remote.Resolve(ctx, repo, rev); rerr == nil && gitcheckout.IsHash(rev) {
		return repo, h, nil
	} else if err := c.Remote.FetchRemote(ctx, rawURL, repo, rev); err != nil {
		return "", "", cloneProblem(ctx, err, rawURL)
	}
	if hash, err = c.Remote.Resolve(ctx, repo, rev); err != nil {
		return "", "", badField("/commit", "names no commit of repo_url's repository")
	}
	return repo, hash, nil
}

// cloneProblem is the answer to a clone or fetch of rawURL that failed:
// what git said, with the URL taken out (an answer never quotes the
// request).
func cloneProblem(ctx context.Context, err error, rawURL string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := strings.ReplaceAll(err.Error(), strings.TrimSuffix(rawURL, "/"), "repo_url")
	return badField("/repo_url", "could not be cloned: %s", textclip.Clip(msg, 400))
}
