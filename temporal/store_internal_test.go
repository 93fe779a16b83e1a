package temporal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/wiring"
)

// TestStoreRunIDs: run ids become path components of the store only in
// the spec's shape; `../../x` wrote outside the store before the fix.
func TestStoreRunIDs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	s, err := NewStore(filepath.Join(base, "a", "store"))
	if err != nil {
		t.Fatal(err)
	}
	obs := gen.Observation{Content: "planted"}
	for _, id := range []string{"../../x", "..", ".", "", "a/b", `a\b`, "run 1", "ü", string(make([]byte, 65))} {
		if err := s.appendEvents(id, 0, [][]byte{[]byte(`{}`)}); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("appendEvents(%q): %v, want ErrInvalidRunID", id, err)
		}
		if err := s.recordCall(id, 1, &obs); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("recordCall(%q): %v, want ErrInvalidRunID", id, err)
		}
		if _, _, err := s.recordedCall(id, 1); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("recordedCall(%q): %v, want ErrInvalidRunID", id, err)
		}
		if _, err := s.events(t.Context(), id, 0); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("events(%q): %v, want ErrInvalidRunID", id, err)
		}
		if _, err := s.TranscriptPath(id); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("TranscriptPath(%q): %v, want ErrInvalidRunID", id, err)
		}
	}
	if err := s.recordCall("run_1-A", -1, &obs); err == nil {
		t.Error("recordCall accepted call -1")
	}
	var found []string
	_ = filepath.Walk(base, func(p string, fi os.FileInfo, _ error) error {
		if fi != nil && !fi.IsDir() {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 0 {
		t.Errorf("files written: %v", found)
	}
	// The spec's shape works.
	if err := s.recordCall("run_1-A", 0, &obs); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.recordedCall("run_1-A", 0); err != nil || !ok || got.Content != "planted" {
		t.Fatalf("recordedCall: %+v %v %v", got, ok, err)
	}
}

// TestBlobChecked: a blob is checked against its sha256 on every read; a
// changed blob is a CorruptBlobError, not a silently decoded payload (before
// the fix the changed payload was decoded and used). Encoding the same
// payload again repairs it.
func TestBlobChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	dc := s.DataConverter(16)
	big := bytes.Repeat([]byte("a"), 100)
	p, err := dc.ToPayload(string(big))
	if err != nil {
		t.Fatal(err)
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
		t.Fatalf("the payload was not stored as a blob: %v", p.GetMetadata())
	}
	key := string(p.GetData())
	path := filepath.Join(dir, "blobs", key)
	// Another payload's encoding planted under this key.
	other, err := converter.GetDefaultDataConverter().ToPayload(string(bytes.Repeat([]byte("b"), 100)))
	if err != nil {
		t.Fatal(err)
	}
	planted, err := other.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, planted, 0o600); err != nil {
		t.Fatal(err)
	}
	var got string
	err = dc.FromPayload(p, &got)
	var ce *corruptBlobError
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("decoding a changed blob: %v (decoded %d bytes), want a CorruptBlobError", err, len(got))
	}
	if _, err := (&blobCodec{store: s}).Decode([]*commonpb.Payload{p}); !errors.As(err, &ce) {
		t.Fatalf("Decode: %v", err)
	}
	// Writing the payload again puts the right blob back.
	if _, err := dc.ToPayload(string(big)); err != nil {
		t.Fatal(err)
	}
	if err := dc.FromPayload(p, &got); err != nil || got != string(big) {
		t.Fatalf("after a rewrite: %v", err)
	}
}

// FuzzStoreRunID: whatever run id the store is given (a workflow input
// anyone with access to the namespace can write), what it writes stays
// under its own run's directory, or the id is refused.
func FuzzStoreRunID(f *testing.F) {
	for _, id := range []string{"run1", "../../x", "..", "a/b", `a\b`, "", "A_b-9"} {
		f.Add(id)
	}
	dir := f.TempDir()
	s, err := NewStore(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, id string) {
		err := s.recordCall(id, 3, &gen.Observation{Content: "x"})
		if err != nil {
			if !errors.Is(err, ErrInvalidRunID) {
				t.Fatalf("recordCall(%q): %v", id, err)
			}
			return
		}
		calls, _ := filepath.Glob(filepath.Join(dir, "runs", id, "calls", "*"))
		if len(calls) != 1 || filepath.Dir(filepath.Dir(filepath.Dir(calls[0]))) != filepath.Join(dir, "runs") {
			t.Fatalf("run id %q: the call record is at %v", id, calls)
		}
	})
}

// BenchmarkAppendEventsToALongTrace is the cost of one activity's batch
// of trace lines late in a long run: it must not grow with the trace.
func BenchmarkAppendEventsToALongTrace(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s, err := NewStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			line := []byte(`{"run_id":"r1","step":1,"event_type":"tool_result","time":"2026-01-01T00:00:00Z","summary":"` + strings.Repeat("x", 200) + `"}`)
			lines := make([][]byte, n)
			for i := range lines {
				lines[i] = line
			}
			if err := s.appendEvents("r1", 0, lines); err != nil {
				b.Fatal(err)
			}
			written := n
			for b.Loop() {
				if err := s.appendEvents("r1", written, [][]byte{line, line}); err != nil {
					b.Fatal(err)
				}
				written += 2
			}
		})
	}
}

// A batch of trace lines is written once: a retried batch keeps the lines
// an earlier attempt wrote, and workers that share the store see each
// other's lines, whatever each counted before.
func TestAppendEventsOnceAcrossRetriesAndWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewStore(dir) // another worker's
	l := func(s string) []byte { return []byte(`{"n":"` + s + `"}`) }
	want := func(names ...string) {
		t.Helper()
		var w [][]byte
		for _, n := range names {
			w = append(w, l(n))
		}
		for _, s := range []*Store{a, b} {
			if got, err := s.events(t.Context(), "r1", 0); err != nil || !slices.EqualFunc(got, w, bytes.Equal) {
				t.Fatalf("the trace is %q (%v), want %q", got, err, w)
			}
		}
	}
	if err := a.appendEvents("r1", 0, [][]byte{l("a"), l("b")}); err != nil {
		t.Fatal(err)
	}
	if err := a.appendEvents("r1", 0, [][]byte{l("A"), l("B")}); err != nil { // a retry
		t.Fatal(err)
	}
	want("a", "b")
	if err := b.appendEvents("r1", 2, [][]byte{l("c"), l("d")}); err != nil {
		t.Fatal(err)
	}
	if err := a.appendEvents("r1", 3, [][]byte{l("D"), l("e")}); err != nil {
		t.Fatal(err)
	}
	want("a", "b", "c", "d", "e")
	if err := b.appendEvents("r1", 9, [][]byte{l("x")}); err == nil {
		t.Fatal("a batch past the trace's end was written")
	}
	want("a", "b", "c", "d", "e")
	if got, _ := a.events(t.Context(), "r1", 3); len(got) != 2 {
		t.Fatalf("events from 3 = %q", got)
	}
}

// The API server's copies of transcripts are refused inside its workspace
// root, where its own tools (POST /v1/tools/{name}, /mcp) could read them:
// a system temporary directory under the root is an error that says what
// to do; one outside it is fine.
func TestTranscriptCacheOutsideTheWorkspaceRoot(t *testing.T) {
	root := t.TempDir()
	inside := filepath.Join(root, "tmp")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", inside)
	s, err := NewStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckCache(root); !errors.Is(err, wiring.ErrRecordsInWorkspace) || !strings.Contains(err.Error(), "TMPDIR") {
		t.Fatalf("a cache inside the workspace root: %v, want ErrRecordsInWorkspace naming TMPDIR", err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	s2, err := NewStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.CheckCache(root); err != nil {
		t.Fatalf("a cache outside the workspace root: %v", err)
	}
}

// TestBaselineReadIsBounded: the keeper reads a baseline record no
// longer than a record can be (tools.MaxBaselineRecord); a longer one in
// the store (damaged, or forged by someone who can write it) is an error,
// never read into memory whole.
func TestBaselineReadIsBounded(t *testing.T) {
	if maxBaselineRead() < 32<<20 {
		t.Fatalf("the bound %d is under the record's content bound", maxBaselineRead())
	}
	defer func(old func() int) { maxBaselineRead = old }(maxBaselineRead)
	maxBaselineRead = func() int { return 1 << 10 }
	s, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := baselineKeeper{s, "run-1"}
	huge := bytes.Repeat([]byte(" "), maxBaselineRead()+1)
	if err := k.SaveBaseline(t.Context(), huge); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := k.LoadBaseline(t.Context()); err == nil || ok || !strings.Contains(err.Error(), "over its bound") {
		t.Fatalf("LoadBaseline of a record over the bound: %d bytes, %v, %v", len(data), ok, err)
	}
	k = baselineKeeper{s, "run-2"}
	if err := k.SaveBaseline(t.Context(), []byte(`{"version":1}`)); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := k.LoadBaseline(t.Context()); err != nil || !ok || string(data) != `{"version":1}` {
		t.Fatalf("LoadBaseline = %s, %v, %v", data, ok, err)
	}
}
