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
// the whole lines written since the last one. The file is untrusted
// input: a line longer than trace.MaxLineBytes is an error.
type Tail struct {
	Path    string
	f       *os.File      // nil until the file exists
	r       *bufio.Reader // reads f
	partial []byte        // the start of a line still being written
}

// Lines calls fn with each whole line added since the last call, without
// its newline (fn may keep it), until fn fails. A file that does not
// exist yet has none.
func (t *Tail) Lines(fn func(line []byte) error) error {
	if t.f == nil {
		f, err := os.Open(t.Path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		t.f, t.r = f, bufio.NewReaderSize(f, 64<<10)
	}
	for {
		chunk, err := t.r.ReadSlice('\n')
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

// Close closes the file.
func (t *Tail) Close() error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}
