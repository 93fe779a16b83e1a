//go:build !unix

package tools

import "io/fs"

// hardLinks is the number of hard links to the file fi describes. Outside
// Unix the standard library's file information does not carry the count,
// so it is taken as 1: the write tools' hard-link refusal is Unix-only.
func hardLinks(fs.FileInfo) uint64 { return 1 }
