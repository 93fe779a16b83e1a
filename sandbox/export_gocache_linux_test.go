package sandbox

import "os"

// ServeCache is the build cache program (serveCache).
var ServeCache = serveCache

// UseGoCaches makes sandboxed commands build into own and read through to
// user as the user's GOCACHE, until restore; for tests that do not run in
// parallel with others.
func UseGoCaches(own, user string) (restore func()) {
	old := goToolchain
	tc := toolchainFor(append(os.Environ(), "GOCACHE="+user), own, "")
	goToolchain = func() toolchain { return tc }
	return func() { goToolchain = old }
}

// UseGoModCaches makes sandboxed commands with the network download into
// own and read through to user as the user's GOMODCACHE, with no proxy
// beyond it, until restore; for tests that do not run in parallel with
// others.
func UseGoModCaches(own, user string) (restore func()) {
	old := goToolchain
	tc := toolchainFor(append(os.Environ(), "GOMODCACHE="+user, "GOPROXY=off"), "", own)
	goToolchain = func() toolchain { return tc }
	return func() { goToolchain = old }
}
