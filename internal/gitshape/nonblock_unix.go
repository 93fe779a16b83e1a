//go:build unix

package gitshape

import "syscall"

// nonblock makes opening a FIFO return at once; regular files ignore it.
const nonblock = syscall.O_NONBLOCK
