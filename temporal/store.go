package temporal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// Store is the durable storage that workers and API servers share: a
// directory (on a shared file system when they run on several machines)
// with, per run, its trace events as JSON lines, its transcript and the
// observations of its tool calls, and the large payloads that workflow
// history refers to.
//
//	<dir>/runs/<run id>/events.jsonl      the run's trace, one event per line
//	<dir>/runs/<run id>/transcript.jsonl  its transcript (package transcript), redacted
//	<dir>/runs/<run id>/calls/<n>.json    the observation of tool call n
//	<dir>/blobs/<sha256>                  a payload over the threshold
//
// Run ids become path components only in the spec's shape
// (ErrInvalidRunID otherwise), and a blob is checked against its sha256
// on every read (a changed blob fails its run). The directory must not be
// reachable from runs: keep it outside every workspace root.
type Store struct {
	dir string

	mu    sync.Mutex
	marks map[string]lineMark // by file: where its lines were last counted
}

// lineMark is a whole-line boundary of an append-only file of JSON lines
// and the lines before it, so that a batch late in a long run reads only
// what was written since (by any worker), not the whole file again.
type lineMark struct {
	off   int64
	lines int
}

// NewStore returns the store in dir, creating it.
func NewStore(dir string) (*Store, error) {
	for _, sub := range []string{"runs", "blobs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("create the store: %w", err)
		}
	}
	return &Store{dir: dir}, nil
}

// ErrInvalidRunID is the error (wrapped) of the store's methods for a run
// id that is not of the spec's shape (the RunID parameter's pattern,
// [A-Za-z0-9_-]{1,64}): run ids become path components of the store, so
// no other id is used, and none can name a path outside it.
var ErrInvalidRunID = errors.New("a run id must be 1 to 64 letters, digits, '_' or '-'")

// checkRunID returns an error wrapping ErrInvalidRunID unless id has the
// spec's run id shape.
func checkRunID(id string) error {
	if !ident.Plain(id) {
		return fmt.Errorf("run id of %d bytes: %w", len(id), ErrInvalidRunID)
	}
	return nil
}

// runPath is the path of elem in run id's directory; the error wraps
// ErrInvalidRunID for an id not of the spec's shape.
func (s *Store) runPath(id string, elem ...string) (string, error) {
	if err := checkRunID(id); err != nil {
		return "", err
	}
	return filepath.Join(append([]string{s.dir, "runs", id}, elem...)...), nil
}

// EventsPath is the file that holds run id's trace events; the error
// wraps ErrInvalidRunID for an id not of the spec's shape.
func (s *Store) EventsPath(id string) (string, error) { return s.runPath(id, "events.jsonl") }

func (s *Store) callPath(id string, seq int) (string, error) {
	if seq < 0 {
		return "", fmt.Errorf("tool call %d: a call number is not negative", seq)
	}
	return s.runPath(id, "calls", fmt.Sprintf("%d.json", seq))
}

// TranscriptPath is the file that holds run id's transcript (package
// transcript); the error wraps ErrInvalidRunID for an id not of the
// spec's shape.
func (s *Store) TranscriptPath(id string) (string, error) { return s.runPath(id, transcript.FileName) }

// appendEvents makes lines from..from+len(lines) of run id's trace equal
// lines: the lines already there (an earlier attempt of the same activity
// wrote them) are skipped, and a torn last line (a crash mid-write) is cut.
func (s *Store) appendEvents(id string, from int, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	path, err := s.EventsPath(id)
	if err != nil {
		return err
	}
	have, err := s.wholeLines(path, from)
	if err != nil {
		return fmt.Errorf("the trace of run %s: %w", id, err)
	}
	skip := min(have-from, len(lines))
	var buf []byte
	for _, l := range lines[skip:] {
		buf = append(append(buf, l...), '\n')
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// appendTranscript makes entries from..from+len(entries) of run id's
// transcript those entries, each redacted by red as transcript.Writer
// writes it; like appendEvents it skips the entries an earlier attempt
// wrote and cuts a torn last line.
func (s *Store) appendTranscript(id string, from int, entries []gen.TranscriptEntry, red *transcript.Redactor) error {
	if len(entries) == 0 {
		return nil
	}
	path, err := s.TranscriptPath(id)
	if err != nil {
		return err
	}
	have, err := s.wholeLines(path, from)
	if err != nil {
		return fmt.Errorf("the transcript of run %s: %w", id, err)
	}
	skip := min(have-from, len(entries))
	// wholeLines read and cut the file: the writer goes on after its lines.
	w, err := transcript.OpenAfter(path, red, trace.SyncEveryEvent, have)
	if err != nil {
		return err
	}
	for _, e := range entries[skip:] {
		if err := w.Write(e); err != nil {
			break // Close returns it
		}
	}
	return w.Close()
}

// wholeLines prepares path (a file of JSON lines, created 0600 in a 0700
// directory when missing) for the lines from on: it cuts a torn last line
// and returns how many whole lines it holds, at least from. It reads the
// file from its mark on (the whole file when it has none, or when the
// file is shorter than the mark: not the file counted).
func (s *Store) wholeLines(path string, from int) (have int, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	m := s.marks[path]
	s.mu.Unlock()
	if fi.Size() < m.off {
		m = lineMark{}
	}
	data := make([]byte, fi.Size()-m.off)
	if _, err := f.ReadAt(data, m.off); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	whole := bytes.LastIndexByte(data, '\n') + 1
	m.off, m.lines = m.off+int64(whole), m.lines+bytes.Count(data[:whole], []byte("\n"))
	if m.lines < from {
		return 0, fmt.Errorf("it has %d lines, and the next batch starts at %d", m.lines, from)
	}
	if whole < len(data) {
		if err := f.Truncate(m.off); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marks == nil {
		s.marks = map[string]lineMark{}
	}
	s.marks[path] = m
	return m.lines, nil
}

// forget drops the marks of run id's files, once the run ended here.
func (s *Store) forget(id string) {
	events, err := s.EventsPath(id)
	if err != nil {
		return
	}
	transcript, _ := s.TranscriptPath(id)
	s.mu.Lock()
	delete(s.marks, events)
	delete(s.marks, transcript)
	s.mu.Unlock()
}

// recordedCall returns the observation recorded for call seq of run id.
func (s *Store) recordedCall(id string, seq int) (obs gen.Observation, ok bool, err error) {
	path, err := s.callPath(id, seq)
	if err != nil {
		return obs, false, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return obs, false, nil
	}
	if err != nil {
		return obs, false, err
	}
	if err := json.Unmarshal(data, &obs); err != nil {
		return obs, false, fmt.Errorf("the record of tool call %d of run %s: %w", seq, id, err)
	}
	return obs, true, nil
}

// recordCall records the observation of call seq of run id, durably.
func (s *Store) recordCall(id string, seq int, obs *gen.Observation) error {
	data, err := json.Marshal(obs)
	if err != nil {
		return err
	}
	path, err := s.callPath(id, seq)
	if err != nil {
		return err
	}
	return writeFileSync(path, data)
}

// writeFileSync writes data to path atomically (a temporary file renamed
// over it) and durably.
func writeFileSync(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// DefaultRefThreshold is the payload size over which the DataConverter
// stores a payload in the Store and passes a reference: well under
// Temporal's 2 MiB payload limit, so that a workflow's history stays small.
const DefaultRefThreshold = 32 << 10

// blobEncoding marks a payload that is a reference to a blob.
const blobEncoding = "specloop/blob-ref"

// DataConverter returns Temporal's default converter with payloads over
// threshold bytes (0 means DefaultRefThreshold) moved into the store: the
// claim-check pattern. Clients and workers must use the same store.
func (s *Store) DataConverter(threshold int) converter.DataConverter {
	if threshold <= 0 {
		threshold = DefaultRefThreshold
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), &blobCodec{store: s, threshold: threshold})
}

// blobCodec stores large payloads as content-addressed blobs.
type blobCodec struct {
	store     *Store
	threshold int
}

func (c *blobCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if len(p.GetData()) <= c.threshold {
			out[i] = p
			continue
		}
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode a payload: %w", err)
		}
		sum := sha256.Sum256(data)
		key := hex.EncodeToString(sum[:])
		path := filepath.Join(c.store.dir, "blobs", key)
		// A blob that is there already is kept only when it is intact
		// (a changed one would fail every read).
		if old, err := os.ReadFile(path); err != nil || sha256.Sum256(old) != sum {
			if err := writeFileSync(path, data); err != nil {
				return nil, fmt.Errorf("store a payload: %w", err)
			}
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(key)}
	}
	return out, nil
}

func (c *blobCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		key := string(p.GetData())
		if _, err := hex.DecodeString(key); err != nil || len(key) != 2*sha256.Size {
			return nil, errors.New("a payload reference is not a blob key")
		}
		data, err := os.ReadFile(filepath.Join(c.store.dir, "blobs", key))
		if err != nil {
			return nil, fmt.Errorf("load a payload: %w", err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != key {
			return nil, &corruptBlobError{Key: key}
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(data, &q); err != nil {
			return nil, fmt.Errorf("decode a stored payload: %w", err)
		}
		out[i] = &q
	}
	return out, nil
}

var _ converter.PayloadCodec = (*blobCodec)(nil)

// corruptBlobError is the error of decoding a payload whose blob in the
// store does not hash to its key: it was changed (or damaged) after it was
// written. The run whose payload it is fails with an internal error; the
// blob is never decoded.
type corruptBlobError struct {
	Key string // the blob's name: the sha256 its content should have
}

func (e *corruptBlobError) Error() string {
	return "the stored payload " + e.Key + " does not match its sha256: the store's blob was changed or damaged"
}
