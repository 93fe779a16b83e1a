package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"

	"github.com/specloop/specloop/internal/gitshape"
)

// toolchain is where the Go toolchain found in PATH keeps its files: the
// variables that say so to a command (GOROOT, GOPATH, GOMODCACHE,
// GOCACHE), the directories it reads (GOROOT, GOMODCACHE) and the one it
// writes (the build cache); all empty when there is none. Commands such
// as `go test` need GOROOT and GOMODCACHE to read and a build cache to
// write.
//
// The build cache is not the user's own GOCACHE: a sandboxed command could
// write crafted entries into it that the user's later builds, outside any
// sandbox, would link into their binaries. Sandboxed commands share a cache
// of their own, USER_CACHE_DIR/specloop/go-build (cache); without a user
// cache directory, there is none and each command builds into its scratch
// HOME. The user's own cache (userCache) is only read, through the cache
// program (see serveCache), and is among the read-only directories.
//
// The module cache is the user's, read-only, for a command without the
// network: what it holds is all such a command can have. A command that
// may use the network downloads into a module cache of the sandbox's own,
// USER_CACHE_DIR/specloop/go-mod (modCache), with the user's cache read
// through as its first module proxy (see online), for the same reason as
// the build cache: what a command downloads never reaches the user's own
// builds.
type toolchain struct {
	env, ro, rw      []string
	cache, userCache string
	// modCache, userModCache and proxy (the user's GOPROXY) are set when
	// a command with the network gets its own module cache.
	modCache, userModCache, proxy string
}

// goToolchain asks the go command once where its files are.
var goToolchain = sync.OnceValue(func() toolchain {
	return toolchainFor(os.Environ(), sandboxCache("go-build"), sandboxCache("go-mod"))
})

// toolchain is where a command of s finds the Go toolchain's files.
func (s *Sandbox) toolchain() toolchain {
	tc := goToolchain()
	if s.policy.AllowNetwork {
		tc = tc.online()
	}
	return tc
}

// online is tc for a command that may use the network: GOMODCACHE is the
// sandbox's own module cache, writable, and GOPROXY lists the user's
// module cache (its cache/download directory, which is a module proxy's
// layout) before the user's own proxies, so a module the user has is
// copied from there and any other is downloaded as the user's go command
// would.
func (tc toolchain) online() toolchain {
	if tc.modCache == "" {
		return tc
	}
	proxy := "file://" + filepath.ToSlash(filepath.Join(tc.userModCache, "cache", "download"))
	if tc.proxy != "" && tc.proxy != "off" {
		proxy += "," + tc.proxy
	}
	tc.env = append(slices.Clip(tc.env), "GOMODCACHE="+tc.modCache, "GOPROXY="+proxy)
	tc.rw = append(slices.Clip(tc.rw), tc.modCache)
	return tc
}

// toolchainFor asks the go command, run with env, where its files are;
// own and ownMod are the sandbox's build and module caches.
func toolchainFor(env []string, own, ownMod string) (tc toolchain) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return tc
	}
	// Asked from "/", with the local toolchain: run from a workspace, a
	// go.mod or go.work there could make the go command switch to
	// (and download) another toolchain before it answered.
	cmd := exec.Command(gobin, "env", "-json", "GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY")
	cmd.Dir = "/"
	cmd.Env = append(env, "GOTOOLCHAIN=local", "GOWORK=off")
	out, err := cmd.Output()
	var v struct{ GOROOT, GOPATH, GOMODCACHE, GOCACHE, GOPROXY string }
	if err != nil || json.Unmarshal(out, &v) != nil {
		return tc
	}
	add := func(name, value string, dirs *[]string) {
		if value != "" {
			tc.env = append(tc.env, name+"="+value)
			*dirs = append(*dirs, value)
		}
	}
	var none []string
	add("GOROOT", realDir(v.GOROOT), &tc.ro)
	add("GOPATH", v.GOPATH, &none)
	userMod := realDir(v.GOMODCACHE)
	add("GOMODCACHE", userMod, &tc.ro)
	if ownMod != "" && userMod != "" && !nested(userMod, ownMod) {
		tc.modCache, tc.userModCache, tc.proxy = ownMod, userMod, v.GOPROXY
	}
	add("GOCACHE", own, &tc.rw)
	tc.cache = own
	// Read through only to a cache apart from the sandbox's own: one
	// inside the other would be writable (Landlock) or hidden (bwrap).
	if user := realDir(v.GOCACHE); own != "" && user != "" && !nested(user, own) {
		tc.userCache = user
		tc.ro = append(tc.ro, user)
	}
	return tc
}

// nested says whether one of the directories a and b is in the other.
func nested(a, b string) bool {
	_, aInB := gitshape.Within(b, a)
	_, bInA := gitshape.Within(a, b)
	return aInB || bInA
}

// realDir is the absolute directory p with symbolic links resolved (when
// it exists); "" when p is not absolute (or "off").
func realDir(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// sandboxCache is the cache directory name of specloop's in the user's
// cache directory that sandboxed commands share (the build cache, the
// module cache), created private to the user; "" when there is no user
// cache directory.
func sandboxCache(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	dir = filepath.Join(dir, "specloop", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	return realDir(dir)
}
