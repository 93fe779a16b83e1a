package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/specloop/specloop/internal/textclip"
)

// bwrapPath is where Debian's bubblewrap package installs bwrap.
var bwrapPath = "/usr/bin/bwrap"

var (
	bwrapOnce sync.Once
	bwrapErr  error
)

// bwrapUsable checks once that bwrap exists and can create the namespaces
// the sandbox uses (it cannot inside some containers, or without
// unprivileged user namespaces).
func bwrapUsable() error {
	bwrapOnce.Do(func() {
		p, err := exec.LookPath(bwrapPath)
		if err != nil {
			if p, err = exec.LookPath("bwrap"); err != nil {
				bwrapErr = errors.New("bwrap is not installed")
				return
			}
		}
		bwrapPath = p
		out, err := exec.Command(p, "--die-with-parent", "--unshare-pid", "--unshare-net", "--new-session", "--cap-drop", "ALL",
			"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true").CombinedOutput()
		if err != nil {
			bwrapErr = fmt.Errorf("bwrap cannot create its namespaces here: %s", strings.TrimSpace(textclip.Clip(string(out), 40)))
		}
	})
	return bwrapErr
}
