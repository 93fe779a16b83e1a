package wslock

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

func tryLock(f *os.File) (bool, error) {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

// Key is a directory's identity: its absolute path, in one letter case
// (the standard library does not give a directory's file index without
// opening it again).
func Key(_ fs.FileInfo, name string) string { return "name:" + strings.ToLower(name) }
