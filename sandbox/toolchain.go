package sandbox

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sync"
)

// toolchain is where the Go toolchain found in PATH keeps its files; the
// zero value when there is none. Commands such as `go test` need GOROOT and
// GOMODCACHE to read and GOCACHE to write.
type toolchain struct {
	goroot, gopath, gomodcache, gocache string
}

var (
	toolchainOnce sync.Once
	toolchainVal  toolchain
)

// goToolchain asks the go command once where its files are.
func goToolchain() toolchain {
	toolchainOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			return
		}
		out, err := exec.Command(gobin, "env", "-json", "GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
		if err != nil {
			return
		}
		var v struct{ GOROOT, GOPATH, GOMODCACHE, GOCACHE string }
		if json.Unmarshal(out, &v) != nil {
			return
		}
		clean := func(p string) string {
			if p == "" || p == "off" || !filepath.IsAbs(p) {
				return ""
			}
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
			return filepath.Clean(p)
		}
		toolchainVal = toolchain{goroot: clean(v.GOROOT), gopath: v.GOPATH, gomodcache: clean(v.GOMODCACHE), gocache: clean(v.GOCACHE)}
	})
	return toolchainVal
}
