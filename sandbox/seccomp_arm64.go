//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	// x32Bit is a bit no arm64 syscall number has.
	x32Bit = 0x40000000
)
