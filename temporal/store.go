package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runstore"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/transcript"
	"github.com/specloop/specloop/wiring"
)

// Store is the durable storage that workers and API servers share, a
// runstore.Store (package runstore: a directory on one machine, an object
// store such as s3:// past it) with, per run, its trace events, its
// transcript and the observations of its tool calls, and the large
// payloads that workflow history refers to. Every object is written once
// and checked against its sha256 on every read (a changed object fails
// its run); run ids are used only in the spec's shape (ErrInvalidRunID
// otherwise). A directory must not be reachable from runs: keep it
// outside every workspace root.
type Store struct {
	rs *runstore.Store

	// cache holds the transcripts TranscriptPath copied out of the store,
	// owner-only, for the readers of files (the runner's transcript API,
	// a follow-up's history); removed by Close.
	cacheOnce sync.Once
	cache     string
	cacheErr  error
}

// NewStore opens the store at loc: a directory (created owner-only) or a
// bucket URL (see runstore.Open).
func NewStore(loc string) (*Store, error) {
	rs, err := runstore.Open(context.Background(), loc)
	if err != nil {
		return nil, err
	}
	return &Store{rs: rs}, nil
}

// Close closes the store and removes its copies of transcripts.
func (s *Store) Close() error {
	err := s.rs.Close()
	s.cacheOnce.Do(func() {}) // no copies after Close
	if s.cache != "" {
		err = errors.Join(err, os.RemoveAll(s.cache))
	}
	return err
}

// ErrInvalidRunID is the error (wrapped) of the store's methods for a run
// id that is not of the spec's shape (the RunID parameter's pattern,
// [A-Za-z0-9_-]{1,64}).
var ErrInvalidRunID = runstore.ErrInvalidRunID

// events returns run id's trace lines from line from on.
func (s *Store) events(ctx context.Context, id string, from int) ([][]byte, error) {
	return s.rs.Lines(ctx, id, runstore.Events, from)
}

// appendEvents makes lines from..from+len(lines) of run id's trace equal
// lines: the lines already there (an earlier attempt of the same activity
// wrote them) are kept.
func (s *Store) appendEvents(id string, from int, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	return s.rs.Append(context.Background(), id, runstore.Events, from, lines)
}

// appendTranscript makes entries from..from+len(entries) of run id's
// transcript those entries, each numbered and redacted by red as
// transcript.Writer writes it; like appendEvents it keeps the entries an
// earlier attempt wrote.
func (s *Store) appendTranscript(id string, from int, entries []gen.TranscriptEntry, red *transcript.Redactor) error {
	if len(entries) == 0 {
		return nil
	}
	lines := make([][]byte, len(entries))
	for i, e := range entries {
		var err error
		if lines[i], err = transcript.EncodeEntry(red, e, from+i+1); err != nil {
			return err
		}
	}
	return s.rs.Append(context.Background(), id, runstore.Transcript, from, lines)
}

// TranscriptPath copies run id's transcript out of the store into a file
// of the store's own (0600 in a 0700 directory, replaced whole) and
// returns its path; for a run with no transcript there is no file.
func (s *Store) TranscriptPath(id string) (string, error) {
	lines, err := s.rs.Lines(context.Background(), id, runstore.Transcript, 0)
	if err != nil {
		return "", err
	}
	cache, err := s.cacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, id+".jsonl")
	if len(lines) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return path, nil
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	f, err := os.CreateTemp(cache, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(buf.Bytes())
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

// RemoveTranscript removes run id's transcript from the store (and the
// store's copy of it): the runner's retention of transcripts.
func (s *Store) RemoveTranscript(id string) error {
	if err := s.rs.DeleteStream(context.Background(), id, runstore.Transcript); err != nil {
		return err
	}
	cache, err := s.cacheDir()
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(cache, id+".jsonl")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// CheckCache makes the directory of the store's copies of transcripts
// (under the system's temporary directory) and refuses it when it lies
// inside root, the API server's workspace root, whose tools could then
// read the runs' transcripts (wiring.ErrRecordsInWorkspace): `serve`
// calls it when it starts.
func (s *Store) CheckCache(root string) error {
	cache, err := s.cacheDir()
	if err != nil {
		return fmt.Errorf("the transcripts' cache: %w", err)
	}
	if err := wiring.CheckRecordsDir(cache, root); err != nil {
		return fmt.Errorf("the transcripts' cache (set TMPDIR to a directory outside the workspace root): %w", err)
	}
	return nil
}

// cacheDir is the directory of the store's copies of transcripts, made
// (0700) on first use.
func (s *Store) cacheDir() (string, error) {
	s.cacheOnce.Do(func() { s.cache, s.cacheErr = os.MkdirTemp("", "specloop-transcripts-") })
	return s.cache, s.cacheErr
}

// recordedCall returns the observation recorded for call seq of run id.
func (s *Store) recordedCall(id string, seq int) (obs gen.Observation, ok bool, err error) {
	data, ok, err := s.rs.Call(context.Background(), id, seq)
	if err != nil || !ok {
		return obs, false, err
	}
	if err := json.Unmarshal(data, &obs); err != nil {
		return obs, false, fmt.Errorf("the record of tool call %d of run %s: %w", seq, id, err)
	}
	return obs, true, nil
}

// recordedSetup is the result of run id's setup command, recorded by the
// attempt of the Open activity that ran it.
func (s *Store) recordedSetup(id string) ([]byte, bool, error) {
	return s.rs.Record(context.Background(), id, "setup", -1)
}

// recordSetup records the result of run id's setup command (the first
// record is kept).
func (s *Store) recordSetup(id string, data []byte) error {
	return s.rs.PutRecord(context.Background(), id, "setup", data)
}

// baselineKeeper keeps run id's patch baseline in the store, as its
// record "baseline" (tools.BaselineKeeper): the first attempt's stays, and
// a worker that takes the run over computes the run's patch against it.
type baselineKeeper struct {
	store *Store
	id    string
}

// maxBaselineRead is the longest baseline record LoadBaseline reads: a
// longer one is the patch's error, and not read into memory whole.
var maxBaselineRead = tools.MaxBaselineRecord

func (k baselineKeeper) LoadBaseline(ctx context.Context) ([]byte, bool, error) {
	return k.store.rs.Record(ctx, k.id, "baseline", int64(maxBaselineRead()))
}

func (k baselineKeeper) SaveBaseline(ctx context.Context, data []byte) error {
	return k.store.rs.PutRecord(ctx, k.id, "baseline", data)
}

// recordCall records the observation of call seq of run id, durably,
// unless one is recorded already.
func (s *Store) recordCall(id string, seq int, obs *gen.Observation) error {
	data, err := json.Marshal(obs)
	if err != nil {
		return err
	}
	return s.rs.PutCall(context.Background(), id, seq, data)
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
		key, err := c.store.rs.PutBlob(context.Background(), data)
		if err != nil {
			return nil, fmt.Errorf("store a payload: %w", err)
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
		data, err := c.store.rs.Blob(context.Background(), key)
		var ce *runstore.CorruptError
		if errors.As(err, &ce) {
			return nil, &corruptBlobError{Key: key}
		}
		if err != nil {
			return nil, fmt.Errorf("load a payload: %w", err)
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
