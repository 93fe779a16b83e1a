package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/specloop/specloop/trace"
)

// Tail reads a file of JSON lines as another writer appends to it (a
// run's transcript, a Temporal run's events): each Lines call hands over
// the whole lines written since the last one. It opens the file afresh
// each time, so that a file on a shared file system shows what other
// machines appended. The file is untrusted input: a line longer than
// trace.MaxLineBytes is an error.
type Tail struct {
	Path    string
	off     int64  // the bytes read so far
	partial []byte // the start of a line still being written
}

// Lines calls fn with each whole line added since the last call, without
// its newline (fn may keep it), until fn fails. A file that does not
// exist yet has none.
func (t *Tail) Lines(fn func(line []byte) error) error {
	f, err := os.Open(t.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		chunk, err := r.ReadSlice('\n')
		t.off += int64(len(chunk))
		t.partial = append(t.partial, chunk...)
		if len(bytes.TrimSuffix(t.partial, []byte("\n"))) > trace.MaxLineBytes {
			return fmt.Errorf("%s has a line longer than %d bytes", filepath.Base(t.Path), trace.MaxLineBytes)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF): // the rest is still being written
			return nil
		case err != nil:
			return err
		}
		line := t.partial[:len(t.partial)-1]
		t.partial = nil
		if err := fn(line); err != nil {
			return err
		}
	}
}
