package tools

import (
	"bytes"
	"fmt"
	"io"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools/internal/linematch"
)

// Resource caps of the file tools. A model (or a client of the server)
// chooses what the tools read; these bound the memory, the CPU and the
// descriptors one call can take, whatever the workspace holds. The README's
// "Code tools" section lists them.
const (
	// maxScanFileSize: read_file refuses larger files and search skips them
	// (refuses one named as its path). Both stream, so this bounds time,
	// not memory.
	maxScanFileSize = 256 << 20
	// maxEditFileSize: edit_file holds the whole file, its new content and
	// its original (for the run's patch) in memory; it refuses larger
	// files, and edits that would make the file larger.
	maxEditFileSize = 16 << 20
	// maxWriteFileSize: write_file refuses larger content, and replacing
	// a larger file. Its diff of the whole old and new content takes time
	// and memory that grow faster than the file (about 80 MiB allocated
	// and 0.4 s to rewrite 1 MiB, 1.2 GiB and 10 s for 16 MiB); edit_file
	// diffs only the lines around its change.
	maxWriteFileSize = 1 << 20
	// searchMaxLine: search reads files in chunks of this size, so a line
	// longer than it is searched in its first searchMaxLine bytes. The
	// matcher's own bounds (the work of one regexp call, the size of an
	// expression) live with it, in tools/internal/linematch.
	searchMaxLine = linematch.MaxLine
	// walkMaxDepth: list_files and search do not enter directories more
	// than this many levels below the directory they walk; a walk holds
	// one descriptor per level.
	walkMaxDepth = 128
	// walkMaxIgnoreLines bounds the .gitignore patterns in effect in a
	// directory (its own and its parents'): each is matched against every
	// path until one decides, so a walk's cost grows with their number. A
	// .gitignore that would pass it is not applied, and a note says so.
	walkMaxIgnoreLines = 2000
	// walkMaxEntries: a walk stops after reading this many directory
	// entries (files, directories and others); Workspace.walkMaxEntries
	// holds it, so that a test can lower it for one workspace.
	walkMaxEntries = 200_000
)

// tooLarge is the file_too_large error for rel, of size bytes, over the
// limit of tool; advice says what to do instead.
func tooLarge(rel string, size, limit int64, tool, advice string) error {
	return Errorf(gen.ErrorCodeFileTooLarge, "%s is %s, over the %s that %s handles; %s", quote(rel), mib(size), mib(limit), tool, advice)
}

// mib renders a size in MiB, rounded up, for messages.
func mib(n int64) string { return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20) }

// sizeText renders a byte count as KiB or MiB when round.
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readCapped reads the whole regular file rel when it holds at most limit
// bytes and refuses it (file_too_large) otherwise, never reading more than
// limit+1 bytes, even from a file that grows meanwhile.
func (w *Workspace) readCapped(rel string, limit int64, tool, advice string) ([]byte, error) {
	f, fi, err := w.openRegular(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, tooLarge(rel, fi.Size(), limit, tool, advice)
	}
	// Room for the file and for the read that sees its end, so the buffer
	// grows only when the file did.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(rel, int64(buf.Len()), limit, tool, advice)
	}
	return buf.Bytes(), nil
}
