// Package runstore keeps what the processes of a Temporal deployment share
// about runs (each run's trace events, transcript and recorded tool
// observations, and the large payloads workflow history refers to) in an
// object store through gocloud.dev/blob: a directory on one machine,
// s3://, gs:// or azblob:// past it.
//
// Every object is written once and never rewritten, and every object's
// name (or first line) holds the sha256 of its content, checked on every read (a changed
// or damaged object is an error, never data):
//
//	runs/<run id>/events/<from>-<to>-<sha256>.jsonl      trace lines [from, to)
//	runs/<run id>/transcript/<from>-<to>-<sha256>.jsonl  transcript lines [from, to)
//	runs/<run id>/calls/<n>.json                          the observation of tool call n
//	runs/<run id>/records/<name>.json                     another record of the run (its setup's result)
//	blobs/<sha256>                                        a payload
//
// (A call or record starts with its content's sha256 and a newline
// instead: its name is fixed, so that it is created once, atomically,
// and the first writer's record is every reader's.)
//
// A stream (events, transcript) is appended a batch at a time, one object
// per batch, so an append costs the batch and a read costs the listing of
// the run's batches, not the run's bytes. An append is idempotent: a batch
// whose range an earlier attempt wrote is skipped, so the first writer's
// lines are the lines every reader sees. Run ids become key components
// only in the spec's shape (ErrInvalidRunID otherwise).
package runstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"

	"github.com/specloop/specloop/internal/ident"
)

// Store is a run store over one bucket. Its methods are safe for
// concurrent use.
type Store struct {
	bucket *blob.Bucket
	dir    string // the bucket's directory when it is a local one: objects are synced to disk
}

// Open opens the store at loc: a directory (a path, or a file:// URL; it
// is created, owner-only) or a bucket URL of a driver linked into the
// program (s3://, gs://, azblob://; see gocloud.dev/blob). A directory
// must not be reachable from runs: keep it outside every workspace root.
func Open(ctx context.Context, loc string) (*Store, error) {
	if loc == "" {
		return nil, errors.New("the run store: no location given")
	}
	dir, isDir, err := localDir(loc)
	if err != nil {
		return nil, err
	}
	if !isDir {
		scheme, _, _ := strings.Cut(loc, "://")
		if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
			return nil, fmt.Errorf("the run store %s: no driver for %s:// in this program (it has %s)", redactURL(loc), scheme, strings.Join(blob.DefaultURLMux().BucketSchemes(), ", "))
		}
		b, err := blob.OpenBucket(ctx, loc)
		if err != nil {
			// The driver's error may repeat the URL, and its query may
			// hold credentials.
			msg := strings.ReplaceAll(err.Error(), loc, redactURL(loc))
			if u, perr := url.Parse(loc); perr == nil {
				if u.RawQuery != "" {
					msg = strings.ReplaceAll(msg, u.RawQuery, "…")
				}
				if u.User != nil {
					msg = strings.ReplaceAll(msg, u.User.String(), "…")
				}
			}
			return nil, fmt.Errorf("the run store %s: %s", redactURL(loc), msg)
		}
		return &Store{bucket: b}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the run store: %w", err)
	}
	// Temporary files next to the objects: inside the owner-only
	// directory, and on the same file system, so the rename works.
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{DirFileMode: 0o700, NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		return nil, fmt.Errorf("the run store %s: %w", dir, err)
	}
	return &Store{bucket: b, dir: dir}, nil
}

// localDir says whether loc names a directory (a path or a file:// URL)
// and which, made absolute.
func localDir(loc string) (dir string, ok bool, err error) {
	if scheme, _, found := strings.Cut(loc, "://"); found && !strings.ContainsAny(scheme, `/\`) {
		if scheme != "file" {
			return "", false, nil
		}
		u, err := url.Parse(loc)
		if err != nil || u.Host != "" || u.Path == "" || u.RawQuery != "" {
			return "", false, fmt.Errorf("the run store %q: a file URL is file:///absolute/dir, without a host or query", loc)
		}
		loc = u.Path
	}
	dir, err = filepath.Abs(loc)
	if err != nil {
		return "", false, fmt.Errorf("the run store %q: %w", loc, err)
	}
	return dir, true, nil
}

// redactURL is loc without user information or query (which may hold
// credentials), for errors.
func redactURL(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "(a bucket URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// Close closes the store's bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// ErrInvalidRunID is the error (wrapped) of the store's methods for a run
// id that is not of the spec's shape (the RunID parameter's pattern,
// [A-Za-z0-9_-]{1,64}): run ids become parts of object names, so no other
// id is used, and none can name an object outside its run.
var ErrInvalidRunID = errors.New("a run id must be 1 to 64 letters, digits, '_' or '-'")

// CheckRunID returns an error wrapping ErrInvalidRunID unless id has the
// spec's run id shape.
func CheckRunID(id string) error {
	if !ident.Plain(id) {
		return fmt.Errorf("run id of %d bytes: %w", len(id), ErrInvalidRunID)
	}
	return nil
}

// CorruptError is the error of reading an object whose content does not
// hash to the sha256 in its name: it was changed or damaged after it was
// written. Its content is never returned.
type CorruptError struct {
	Key string // the object's name
}

func (e *CorruptError) Error() string {
	return "the run store's object " + e.Key + " does not match its sha256: it was changed or damaged"
}

// GapError is the error of reading a stream whose batches leave lines
// out: an append that would leave a gap is refused, so a batch that was
// written is missing (removed or lost), and no number of reads finds it.
type GapError struct {
	Stream   Stream
	ID       string
	From, To int // the lines missing, [From, To)
}

func (e *GapError) Error() string {
	return fmt.Sprintf("the %s of run %s has no lines %d to %d", e.Stream, e.ID, e.From, e.To-1)
}

// Stream names one of a run's append-only streams of lines.
type Stream string

const (
	Events     Stream = "events"     // the run's trace, one event per line
	Transcript Stream = "transcript" // its transcript (package transcript), redacted before it is appended
)

func (st Stream) check() error {
	if st != Events && st != Transcript {
		return fmt.Errorf("the run store has no stream %q", string(st))
	}
	return nil
}

// width is the digits of a line or call number in an object's name: the
// names sort as the numbers do.
const width = 10

// maxNumber is the largest line or call number a name can hold.
const maxNumber = 9_999_999_999

// batch is one object of a stream: lines [from, to), their content's
// sha256 in its name.
type batch struct {
	key      string
	from, to int
	sum      string
}

// parseBatch reads an object name of a stream's prefix; ok is false for
// any other name (a temporary file a crash left behind, say).
func parseBatch(prefix, key string) (b batch, ok bool) {
	name, found := strings.CutPrefix(key, prefix)
	if !found {
		return b, false
	}
	name, found = strings.CutSuffix(name, ".jsonl")
	if !found || len(name) != 2*width+2+2*sha256.Size || name[width] != '-' || name[2*width+1] != '-' {
		return b, false
	}
	from, ok1 := number(name[:width])
	to, ok2 := number(name[width+1 : 2*width+1])
	sum := name[2*width+2:]
	if !ok1 || !ok2 || to <= from || !isHexSum(sum) {
		return b, false
	}
	return batch{key: key, from: from, to: to, sum: sum}, true
}

// number reads a name's line number: digits only.
func number(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = 10*n + int(s[i]-'0')
	}
	return n, true
}

func isHexSum(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func hexSum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func streamPrefix(id string, st Stream) (string, error) {
	if err := CheckRunID(id); err != nil {
		return "", err
	}
	if err := st.check(); err != nil {
		return "", err
	}
	return "runs/" + id + "/" + string(st) + "/", nil
}

// Append makes lines from..from+len(lines) of run id's stream st equal
// lines, as one object. The lines an earlier append wrote are kept: a
// batch that starts inside them is skipped up to their end, and lines
// that would leave a gap (from past the stream's end) are an error. A line
// holds no newline.
func (s *Store) Append(ctx context.Context, id string, st Stream, from int, lines [][]byte) error {
	prefix, err := streamPrefix(id, st)
	if err != nil {
		return err
	}
	if from < 0 || from+len(lines) > maxNumber {
		return fmt.Errorf("the %s of run %s: line %d is out of range", st, id, from)
	}
	for i, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return fmt.Errorf("the %s of run %s: line %d holds a newline", st, id, from+i)
		}
	}
	batches, err := s.batches(ctx, prefix)
	if err != nil {
		return fmt.Errorf("the %s of run %s: %w", st, id, err)
	}
	have := end(batches)
	if from > have {
		return fmt.Errorf("the %s of run %s has %d lines, and the next batch starts at %d", st, id, have, from)
	}
	if skip := have - from; skip > 0 {
		if skip >= len(lines) {
			return nil
		}
		lines, from = lines[skip:], have
	}
	if len(lines) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	key := fmt.Sprintf("%s%0*d-%0*d-%s.jsonl", prefix, width, from, width, from+len(lines), hexSum(buf.Bytes()))
	return s.put(ctx, key, buf.Bytes(), "application/x-ndjson")
}

// end is the number of lines the batches hold from line 0 without a gap.
func end(batches []batch) int {
	n := 0
	for _, b := range batches {
		if b.from > n {
			break
		}
		n = max(n, b.to)
	}
	return n
}

// list returns the objects whose names start with prefix. A directory
// store's temporary file, renamed into place while it is listed, fails a
// listing (the driver finds it gone): that listing is tried again.
func (s *Store) list(ctx context.Context, prefix string) ([]*blob.ListObject, error) {
	for try := 0; ; try++ {
		var out []*blob.ListObject
		it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
		for {
			obj, err := it.Next(ctx)
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				if s.dir != "" && gcerrors.Code(err) == gcerrors.NotFound && try < 10 {
					break
				}
				return nil, err
			}
			out = append(out, obj)
		}
	}
}

// batches lists a stream's objects, by first line (and, for one first
// line, longest first).
func (s *Store) batches(ctx context.Context, prefix string) ([]batch, error) {
	objs, err := s.list(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []batch
	for _, obj := range objs {
		if b, ok := parseBatch(prefix, obj.Key); ok {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b batch) int {
		if a.from != b.from {
			return a.from - b.from
		}
		if a.to != b.to {
			return b.to - a.to
		}
		return strings.Compare(a.sum, b.sum)
	})
	return out, nil
}

// Lines returns the lines of run id's stream st from line from on (none
// when it has no more). A stream with a gap (GapError), or an object that
// does not match its sha256 (CorruptError), is an error.
func (s *Store) Lines(ctx context.Context, id string, st Stream, from int) ([][]byte, error) {
	prefix, err := streamPrefix(id, st)
	if err != nil {
		return nil, err
	}
	batches, err := s.batches(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("the %s of run %s: %w", st, id, err)
	}
	var out [][]byte
	next := 0
	for _, b := range batches {
		if b.to <= next {
			continue // a batch the ones before cover
		}
		if b.from > next {
			return nil, &GapError{Stream: st, ID: id, From: next, To: b.from}
		}
		if b.to <= from {
			next = b.to
			continue
		}
		data, err := s.get(ctx, b.key, b.sum)
		if err != nil {
			return nil, err
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) != b.to-b.from || !bytes.HasSuffix(data, []byte("\n")) {
			return nil, &CorruptError{Key: b.key}
		}
		for i, l := range lines {
			if n := b.from + i; n >= next && n >= from {
				out = append(out, l[:len(l)-1])
			}
		}
		next = b.to
	}
	return out, nil
}

func callPrefix(id string, seq int) (string, error) {
	if err := CheckRunID(id); err != nil {
		return "", err
	}
	if seq < 0 || seq > maxNumber {
		return "", fmt.Errorf("tool call %d: a call number is 0 to %d", seq, maxNumber)
	}
	return fmt.Sprintf("runs/%s/calls/%0*d.json", id, width, seq), nil
}

// PutCall records data as the observation of tool call seq of run id,
// unless one is recorded already (then the first is kept).
func (s *Store) PutCall(ctx context.Context, id string, seq int, data []byte) error {
	prefix, err := callPrefix(id, seq)
	if err != nil {
		return err
	}
	return s.putOnce(ctx, prefix, data)
}

// Call returns the observation recorded for tool call seq of run id; ok
// is false when none is.
func (s *Store) Call(ctx context.Context, id string, seq int) (data []byte, ok bool, err error) {
	prefix, err := callPrefix(id, seq)
	if err != nil {
		return nil, false, err
	}
	return s.getOnce(ctx, prefix, -1)
}

func recordPrefix(id, name string) (string, error) {
	if err := CheckRunID(id); err != nil {
		return "", err
	}
	if !ident.Plain(name) {
		return "", fmt.Errorf("a record's name is letters, digits, '_' or '-', not %q", name)
	}
	return "runs/" + id + "/records/" + name + ".json", nil
}

// PutRecord records data under name for run id (such as the result of
// its setup, which a retried activity must not run again), unless a
// record of that name is there already (then the first is kept).
func (s *Store) PutRecord(ctx context.Context, id, name string, data []byte) error {
	prefix, err := recordPrefix(id, name)
	if err != nil {
		return err
	}
	return s.putOnce(ctx, prefix, data)
}

// Record returns run id's record name; ok is false when there is none.
// With a max of 0 or more the record's data is at most max bytes: of a
// longer one (damaged, or written by someone else) no more than that is
// read, and it is an error; a negative max sets no bound.
func (s *Store) Record(ctx context.Context, id, name string, max int64) (data []byte, ok bool, err error) {
	prefix, err := recordPrefix(id, name)
	if err != nil {
		return nil, false, err
	}
	return s.getOnce(ctx, prefix, max)
}

// putOnce creates the object key with data unless it exists: the first
// writer's data stays, whoever writes next. The object is data's sha256
// in hex, a newline, then data (the name cannot hold the hash: it is
// fixed, so that creating it is one atomic step).
func (s *Store) putOnce(ctx context.Context, key string, data []byte) error {
	obj := append([]byte(hexSum(data)+"\n"), data...)
	if s.dir == "" {
		// The object stores create with a precondition (S3's and Azure's
		// If-None-Match, GCS's DoesNotExist): one writer wins.
		return s.put(ctx, key, obj, "application/json")
	}
	// fileblob's IfNotExist holds only within one process: a hard link
	// of a synced temporary file is the atomic create across processes.
	path := filepath.Join(s.dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".once-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(obj)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncObject(s.dir, key)
}

// getOnce reads the object putOnce wrote under key, checked against the
// sha256 it holds; with a max of 0 or more, only when its data is at most
// max bytes.
func (s *Store) getOnce(ctx context.Context, key string, max int64) (data []byte, ok bool, err error) {
	var obj []byte
	if max < 0 {
		obj, err = s.bucket.ReadAll(ctx, key)
	} else if r, rerr := s.bucket.NewReader(ctx, key, nil); rerr != nil {
		err = rerr
	} else {
		head := int64(len(hexSum(nil)) + 1)
		obj, err = io.ReadAll(io.LimitReader(r, head+max+1))
		err = errors.Join(err, r.Close())
		if err == nil && int64(len(obj)) > head+max {
			return nil, false, fmt.Errorf("%s in the run store is over its bound of %d bytes", key, max)
		}
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s from the run store: %w", key, err)
	}
	sum, data, found := bytes.Cut(obj, []byte("\n"))
	if !found || !isHexSum(string(sum)) || hexSum(data) != string(sum) {
		return nil, false, &CorruptError{Key: key}
	}
	return data, true, nil
}

// PutBlob stores data under its sha256, which it returns as the blob's key.
func (s *Store) PutBlob(ctx context.Context, data []byte) (key string, err error) {
	key = hexSum(data)
	// A blob that is there already is kept only when it is intact (a
	// changed one would fail every read).
	// Any other error of the read (the store's own trouble) leaves the
	// blob alone: other runs' histories may refer to it.
	var corrupt *CorruptError
	if _, err := s.get(ctx, "blobs/"+key, key); errors.As(err, &corrupt) {
		if err := s.bucket.Delete(ctx, "blobs/"+key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return "", fmt.Errorf("replace a damaged blob: %w", err)
		}
	}
	return key, s.put(ctx, "blobs/"+key, data, "application/octet-stream")
}

// Blob returns the blob stored under key.
func (s *Store) Blob(ctx context.Context, key string) ([]byte, error) {
	if !isHexSum(key) {
		return nil, errors.New("a blob key is a sha256 in hex")
	}
	return s.get(ctx, "blobs/"+key, key)
}

// DeleteStream removes run id's stream st (the retention of transcripts).
func (s *Store) DeleteStream(ctx context.Context, id string, st Stream) error {
	prefix, err := streamPrefix(id, st)
	if err != nil {
		return err
	}
	return s.deletePrefix(ctx, prefix)
}

// deletePrefix removes the objects whose names start with prefix.
func (s *Store) deletePrefix(ctx context.Context, prefix string) error {
	objs, err := s.list(ctx, prefix)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := s.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return err
		}
	}
	return nil
}

// put writes an object once: when one is there under key already (its
// name holds the content's hash, so it has the same content), it is kept.
func (s *Store) put(ctx context.Context, key string, data []byte, contentType string) error {
	err := s.bucket.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: contentType, IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write %s to the run store: %w", key, err)
	}
	if s.dir != "" {
		return syncObject(s.dir, key)
	}
	return nil
}

// get reads an object and checks it against the sha256 in its name.
func (s *Store) get(ctx context.Context, key, sum string) ([]byte, error) {
	data, err := s.bucket.ReadAll(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s from the run store: %w", key, err)
	}
	if hexSum(data) != sum {
		return nil, &CorruptError{Key: key}
	}
	return data, nil
}

// syncObject makes an object of a directory store durable: the file, and
// the directory that holds its name (the driver renames a temporary file
// into place, but syncs neither).
func syncObject(dir, key string) error {
	path := filepath.Join(dir, filepath.FromSlash(key))
	for _, p := range []string{path, filepath.Dir(path)} {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return err
		}
	}
	return nil
}
