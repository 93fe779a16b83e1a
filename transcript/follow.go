package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// FollowInterval is how often Follow looks for new entries.
const FollowInterval = 100 * time.Millisecond

// Follow calls fn with each entry of the transcript at path, those written
// so far and then each as it is written, until the entry of run_finished,
// an error of fn, or ctx is done (then it returns ctx's error). A path
// that does not exist yet is waited for, as a run that has not started.
func Follow(ctx context.Context, path string, fn func(gen.TranscriptEntry) error) error {
	f, err := os.Open(path)
	for errors.Is(err, os.ErrNotExist) {
		if err := sleep(ctx); err != nil {
			return err
		}
		f, err = os.Open(path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var pending []byte // what was read past the last whole line
	for n := 1; ; {
		i := bytes.IndexByte(pending, '\n')
		if i < 0 { // the writer is not done with the line: read on, or wait
			if len(pending) > trace.MaxLineBytes {
				return &trace.LineError{Line: n, Err: fmt.Errorf("longer than %d bytes", trace.MaxLineBytes)}
			}
			k, err := f.Read(buf)
			if err != nil && !errors.Is(err, io.EOF) {
				return &trace.LineError{Line: n, Err: err}
			}
			if pending = append(pending, buf[:k]...); k == 0 {
				if err := sleep(ctx); err != nil {
					return err
				}
			}
			continue
		}
		if body := bytes.TrimSpace(pending[:i]); len(body) > 0 {
			e, err := ParseEntry(body)
			if err != nil {
				return &trace.LineError{Line: n, Err: err}
			}
			if err := fn(e); err != nil {
				return err
			}
			if e.EventType == gen.TraceEventTypeRunFinished {
				return nil
			}
		}
		pending, n = pending[i+1:], n+1
	}
}

func sleep(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(FollowInterval):
		return nil
	}
}
