package transcript

import (
	"bufio"
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
	var f *os.File
	for f == nil {
		var err error
		if f, err = os.Open(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if f == nil {
			if err := sleep(ctx); err != nil {
				return err
			}
		}
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var pending []byte // a line read up to the end of the file so far
	for n := 1; ; {
		line, err := readLine(br)
		pending = append(pending, line...)
		if err != nil && !errors.Is(err, io.EOF) {
			return &trace.LineError{Line: n, Err: err}
		}
		if !bytes.HasSuffix(pending, []byte("\n")) { // the writer is not done with it
			if err := sleep(ctx); err != nil {
				return err
			}
			continue
		}
		if body := bytes.TrimSpace(pending); len(body) > 0 {
			e, perr := ParseEntry(body)
			if perr != nil {
				return &trace.LineError{Line: n, Err: perr}
			}
			if err := fn(e); err != nil {
				return err
			}
			if e.EventType == gen.TraceEventTypeRunFinished {
				return nil
			}
		}
		pending, n = pending[:0], n+1
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

// readLine reads one line with its newline (none at the end of the input
// so far), at most trace.MaxLineBytes of it.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > trace.MaxLineBytes {
			return nil, fmt.Errorf("longer than %d bytes", trace.MaxLineBytes)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
