//go:build linux && !amd64 && !arm64

package sandbox

// No seccomp network filter on this architecture: Landlock then refuses to
// deny the network (see resolve).
const (
	auditArch = 0
	x32Bit    = 0
)
