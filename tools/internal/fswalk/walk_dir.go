package fswalk

import (
	"io"
	"io/fs"
	"strings"
)

// The directory handles of a walk: how a directory is opened and how its
// files are opened and read depends on the system (walk_unix.go opens each
// name relative to its directory's descriptor; walk_other.go opens it
// through the workspace's os.Root). What follows is common to both.

func (d *Dir) acquire() { d.refs.Add(1) }

func (d *Dir) Release() {
	if d.refs.Add(-1) == 0 {
		d.dir.Close()
	}
}

// entries lists the directory, reading at most max entries; more reports
// that it has more.
func (d *Dir) entries(max int) (es []fs.DirEntry, more bool, err error) {
	for len(es) < max {
		batch, err := d.dir.ReadDir(min(1024, max-len(es)))
		es = append(es, batch...)
		if err == io.EOF || len(batch) == 0 {
			return es, false, nil
		}
		if err != nil {
			return es, false, err
		}
	}
	// Full: one more entry says whether the listing was cut.
	next, _ := d.dir.ReadDir(1)
	return es, len(next) > 0, nil
}

// validName reports whether name is a single path component of a
// directory: never empty, ".", ".." or holding a separator.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, '/')
}
