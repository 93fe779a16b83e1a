//go:build unix

package runner

import (
	"fmt"
	"io/fs"
	"syscall"
)

// dirKey is a directory's identity: its device and inode, or its name in
// the workspace root where the system does not tell them.
func dirKey(fi fs.FileInfo, name string) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return "name:" + name
}
