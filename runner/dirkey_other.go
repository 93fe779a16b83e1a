//go:build !unix

package runner

import "io/fs"

// dirKey is a directory's identity. Outside Unix the standard library's
// file information carries no device and inode, so it is the directory's
// name in the workspace root: two names of one directory (through a link)
// then count as two workspaces.
func dirKey(_ fs.FileInfo, name string) string { return "name:" + name }
