// Package wslock gives one specloop process at a time a workspace
// directory, across processes: an exclusive lock (flock on Unix,
// LockFileEx on Windows) on a file outside the workspace, named by the
// directory's identity, which the system releases when the process ends,
// however it ends.
package wslock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PollInterval is how often a waiting Acquire tries the lock again.
const PollInterval = 100 * time.Millisecond

// Lock is a held lock.
type Lock struct{ f *os.File }

// Acquire takes the lock named key (a directory's identity, see Key) in
// the directory dir (created 0700 if missing; every process that must
// exclude the others uses the same one). While another process holds it,
// Acquire calls waiting once with what that process wrote of itself (its
// pid and what it runs; "" when unknown) and tries again every
// PollInterval until it gets the lock or ctx is done.
func Acquire(ctx context.Context, dir, key string, waiting func(holder string)) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workspace lock: %w", err)
	}
	sum := sha256.Sum256([]byte(key))
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace lock: %w", err)
	}
	for first := true; ; first = false {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("workspace lock: %w", err)
		}
		if ok {
			// Who holds it, for the processes that wait; the lock is what
			// excludes them, so a failed note changes nothing.
			if f.Truncate(0) == nil {
				_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d: %s\n", os.Getpid(), strings.Join(os.Args, " "))), 0)
			}
			return &Lock{f: f}, nil
		}
		if first && waiting != nil {
			buf := make([]byte, 512)
			n, _ := f.ReadAt(buf, 0)
			waiting(strings.TrimSpace(string(buf[:n])))
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(PollInterval):
		}
	}
}

// Release lets the next process have the workspace.
func (l *Lock) Release() error { return l.f.Close() }
