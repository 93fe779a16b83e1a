package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/specloop/specloop/gen"
)

// read_file caps, as its description in the spec says.
const (
	readMaxLines    = 2000
	readMaxBytes    = 256 << 10
	readMaxLineLen  = 4000 // longer lines are clipped
	readBufferBytes = 64 << 10
)

var readFileHandler = Func(NeedsWorkspace, readFile, renderReadFile)

func readFile(ctx context.Context, env *Env, in *gen.ReadFileInput) (*gen.ReadFileResult, error) {
	rel, err := clean(in.Path)
	if err != nil {
		return nil, err
	}
	start, end := orDefault(in.StartLine, defaultStartLine), -1
	if in.EndLine != nil {
		end = *in.EndLine
		if end < start {
			return nil, Errorf(gen.ErrorCodeInvalidRange, "end_line %d is before start_line %d", end, start)
		}
	}
	f, fi, err := env.Workspace.openRegular(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxScanFileSize {
		return nil, tooLarge(rel, fi.Size(), maxScanFileSize, "read_file", "look at parts of it with run_command (head, tail, sed -n, grep)")
	}
	// The file is read to its end (for the line count) in bounded memory;
	// a file that grows meanwhile is read up to the cap.
	br := bufio.NewReaderSize(io.LimitReader(f, maxScanFileSize), readBufferBytes)
	head, err := br.Peek(binarySniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if isBinary(head) {
		return nil, Errorf(gen.ErrorCodeBinaryFile, "%s is a binary file; it cannot be read as text", quote(rel))
	}

	var content strings.Builder
	line, emitted, last := 0, 0, start-1
	capped := false
	for {
		text, ok, err := readLine(ctx, br, readMaxLineLen)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		if !ok {
			break
		}
		line++
		if line%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if line >= start && (end < 0 || line <= end) {
			if emitted == readMaxLines || content.Len() >= readMaxBytes {
				capped = true
			} else {
				content.WriteString(strconv.Itoa(line))
				content.WriteByte('\t')
				content.Write(text)
				content.WriteByte('\n')
				emitted++
				last = line
			}
		}
		if capped || end >= 0 && line >= end {
			// The rest only needs counting.
			n, err := countRest(ctx, br)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", rel, err)
			}
			line += n
			break
		}
	}
	total := line
	if start > 1 && start > total {
		return nil, Errorf(gen.ErrorCodeInvalidRange, "start_line %d is past the end of the file, which has %s", start, plural(total, "line"))
	}
	out := &gen.ReadFileResult{
		Path:       rel,
		Content:    content.String(),
		StartLine:  start,
		EndLine:    last,
		TotalLines: total,
	}
	if capped {
		out.Truncated = true
		out.NextStartLine = new(last + 1)
	}
	return out, nil
}

// readLine returns the next line without its line end ("\n" or "\r\n"),
// clipped to max bytes; ok is false at the end of the file. It stops with
// ctx's error in a long line when ctx is done.
func readLine(ctx context.Context, br *bufio.Reader, max int) (text []byte, ok bool, err error) {
	text, more, err := br.ReadLine()
	switch {
	case err == io.EOF:
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case !more:
		return clipLine(text, max, len(text)), true, nil
	}
	// A line longer than the buffer: keep its beginning, count the rest.
	keep, size := bytes.Clone(text), len(text)
	for more {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		if text, more, err = br.ReadLine(); err != nil && err != io.EOF {
			return nil, false, err
		}
		size += len(text)
	}
	return clipLine(keep, max, size), true, nil
}

// countRest counts the lines left in br.
func countRest(ctx context.Context, br *bufio.Reader) (int, error) {
	buf := make([]byte, readBufferBytes)
	n, lastByte := 0, byte('\n')
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k, err := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			lastByte = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if lastByte != '\n' {
		n++
	}
	return n, nil
}

func renderReadFile(_ *gen.ReadFileInput, out *gen.ReadFileResult) string {
	var b strings.Builder
	switch {
	case out.TotalLines == 0:
		fmt.Fprintf(&b, "%s is empty (0 lines)\n", out.Path)
	case out.EndLine < out.StartLine:
		fmt.Fprintf(&b, "%s: no lines from %d (%s in the file)\n", out.Path, out.StartLine, plural(out.TotalLines, "line"))
	default:
		fmt.Fprintf(&b, "%s: lines %d-%d of %d\n", out.Path, out.StartLine, out.EndLine, out.TotalLines)
	}
	b.WriteString(out.Content)
	if out.Truncated {
		fmt.Fprintf(&b, "[output cut at %d lines or %d KiB; call read_file with start_line %d to read on]\n", readMaxLines, readMaxBytes>>10, *out.NextStartLine)
	}
	return b.String()
}
