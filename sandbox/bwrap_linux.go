package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/specloop/specloop/internal/textclip"
)

// bwrapUsable checks once that bwrap exists and can create the namespaces
// the sandbox uses (it cannot inside some containers, or without
// unprivileged user namespaces), and returns its path: where Debian's
// bubblewrap package installs it, else the one in PATH.
var bwrapUsable = sync.OnceValues(func() (string, error) {
	p, err := exec.LookPath("/usr/bin/bwrap")
	if err != nil {
		if p, err = exec.LookPath("bwrap"); err != nil {
			return "", errors.New("bwrap is not installed")
		}
	}
	out, err := exec.Command(p, "--die-with-parent", "--unshare-pid", "--unshare-net", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bwrap cannot create its namespaces here: %s", strings.TrimSpace(textclip.Clip(string(out), 40)))
	}
	return p, nil
})
