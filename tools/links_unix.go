//go:build unix

package tools

import (
	"io/fs"
	"syscall"
)

// hardLinks is the number of hard links to the file fi describes.
func hardLinks(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
