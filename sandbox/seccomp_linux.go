package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// auditArch is the architecture a seccomp filter checks syscalls are of,
// by GOARCH; 0 for one denySockets does not know.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// x32Bit is set in the syscall numbers of amd64's x32 ABI; no arm64
// syscall number has it.
const x32Bit = 0x40000000

// denySockets installs a seccomp filter on the calling thread (inherited
// by the command) that refuses every socket but AF_UNIX ones and io_uring
// (which can open sockets without socket(2)). Landlock alone denies TCP
// below ABI 10, but not UDP, raw or other families. Syscalls of another
// architecture's ABI (x32, i386 via int 0x80) are refused outright.
func denySockets() error {
	if auditArch == 0 {
		return errors.New("sandbox helper: no seccomp network filter for this architecture")
	}
	deny := func(errno unix.Errno) bpf.Instruction {
		return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(errno)}
	}
	prog := []bpf.Instruction{
		// [0] arch
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
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
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("sandbox helper: seccomp program: %w", err)
	}
	// A bpf.RawInstruction is laid out as the kernel's struct sock_filter.
	fprog := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	// no_new_privs is set: confineLandlock set it for Landlock.
	// seccomp(2) without SECCOMP_FILTER_FLAG_TSYNC filters this thread only.
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("sandbox helper: seccomp: %w", errno)
	}
	return nil
}
