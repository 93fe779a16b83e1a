package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompSupported reports whether denySockets knows this architecture.
const seccompSupported = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"

// auditArch is the architecture a seccomp filter checks syscalls are of.
func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// x32Bit is set in the syscall numbers of amd64's x32 ABI; no arm64
// syscall number has it.
const x32Bit = 0x40000000

// denySockets installs a seccomp filter on the calling thread (inherited
// by the command) that refuses every socket but AF_UNIX ones and io_uring
// (which can open sockets without socket(2)). Landlock alone denies TCP
// below ABI 10, but not UDP, raw or other families. Syscalls of another
// architecture's ABI (x32, i386 via int 0x80) are refused outright.
func denySockets() error {
	if !seccompSupported {
		return errors.New("sandbox helper: no seccomp network filter for this architecture")
	}
	const (
		retAllow = unix.SECCOMP_RET_ALLOW
		retErrno = unix.SECCOMP_RET_ERRNO
	)
	deny := func(errno unix.Errno) bpf.Instruction {
		return bpf.RetConstant{Val: retErrno | uint32(errno)}
	}
	prog := []bpf.Instruction{
		// [0] arch
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch(), SkipTrue: 1},
		deny(unix.EPERM),
		// [3] syscall number; x32 numbers have bit 30 set
		bpf.LoadAbsolute{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipFalse: 1},
		deny(unix.EPERM),
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IO_URING_SETUP, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IO_URING_ENTER, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IO_URING_REGISTER, SkipFalse: 1},
		deny(unix.ENOSYS),
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 3},
		// socket(domain, ...): the low 32 bits of args[0] (little-endian)
		bpf.LoadAbsolute{Off: 16, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
		deny(unix.EAFNOSUPPORT),
		bpf.RetConstant{Val: retAllow},
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("sandbox helper: seccomp program: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox helper: no_new_privs: %w", err)
	}
	// seccomp(2) without SECCOMP_FILTER_FLAG_TSYNC filters this thread only.
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("sandbox helper: seccomp: %w", errno)
	}
	return nil
}
