// Package fswalk lists the regular files under a directory of an os.Root in
// path order, as git would see them (.gitignore files applied, .git,
// symbolic links and special files skipped), within caps on entries, depth
// and patterns.
package fswalk
