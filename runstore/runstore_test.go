package runstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	_ "gocloud.dev/blob/s3blob"

	"github.com/specloop/specloop/runstore"
)

// stores opens one store of each kind the tests run against: a directory,
// and a bucket of a real S3 API (gofakes3, in the test process), opened by
// its s3:// URL as a deployment opens it.
func stores(t *testing.T) map[string]*runstore.Store {
	t.Helper()
	ctx := context.Background()
	dir, err := runstore.Open(ctx, filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })

	// The bucket exists before the store is used, as a deployment's does
	// (an auto-created one would not exist until the first write, and a
	// read before it would fail).
	backend := s3mem.New()
	if err := backend.CreateBucket("specloop-runs"); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(fake.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	q := url.Values{"endpoint": {fake.URL}, "use_path_style": {"true"}, "region": {"us-east-1"}, "disable_https": {"true"}}
	s3, err := runstore.Open(ctx, "s3://specloop-runs?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Close() })
	return map[string]*runstore.Store{"dir": dir, "s3": s3}
}

func lines(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func join(ls [][]byte) string { return string(bytes.Join(ls, []byte("|"))) }

// TestAppendIsIdempotent: batches appended in order read back as one
// stream, from any line; a batch an earlier attempt wrote (the same range,
// or one that starts inside it) keeps the first writer's lines; a batch
// past the end is refused, so a stream never has a gap.
func TestAppendIsIdempotent(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(s.Append(ctx, "run-1", runstore.Events, 0, lines("a", "b")))
			must(s.Append(ctx, "run-1", runstore.Events, 2, lines("c")))
			// A retried attempt of the first batch, with other content
			// (an event's time, say): the first lines stay.
			must(s.Append(ctx, "run-1", runstore.Events, 0, lines("A", "B")))
			// A retry that overlaps the end and goes on.
			must(s.Append(ctx, "run-1", runstore.Events, 1, lines("X", "Y", "d")))
			got, err := s.Lines(ctx, "run-1", runstore.Events, 0)
			must(err)
			if join(got) != "a|b|c|d" {
				t.Fatalf("lines = %q, want a|b|c|d", join(got))
			}
			got, err = s.Lines(ctx, "run-1", runstore.Events, 2)
			must(err)
			if join(got) != "c|d" {
				t.Fatalf("lines from 2 = %q, want c|d", join(got))
			}
			got, err = s.Lines(ctx, "run-1", runstore.Events, 9)
			must(err)
			if len(got) != 0 {
				t.Fatalf("lines past the end = %q", join(got))
			}
			err = s.Append(ctx, "run-1", runstore.Events, 6, lines("gap"))
			if err == nil || !strings.Contains(err.Error(), "has 4 lines, and the next batch starts at 6") {
				t.Fatalf("append past the end: %v", err)
			}
			// The other stream of the run, and another run, are apart.
			must(s.Append(ctx, "run-1", runstore.Transcript, 0, lines("t")))
			if got, _ := s.Lines(ctx, "run-2", runstore.Events, 0); len(got) != 0 {
				t.Fatalf("run-2 sees %q", join(got))
			}
			if got, _ := s.Lines(ctx, "run-1", runstore.Transcript, 0); join(got) != "t" {
				t.Fatalf("transcript = %q", join(got))
			}
			if err := s.Append(ctx, "run-1", runstore.Events, 4, lines("two\nlines")); err == nil {
				t.Fatal("a line with a newline was appended")
			}
		})
	}
}

// TestRunIDsStayInTheirRun: an id outside the spec's shape never becomes
// part of an object's name (it could name another run's objects, or
// climb out of runs/).
func TestRunIDsStayInTheirRun(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, id := range []string{"", "../blobs", "a/b", "run-1/../run-2", strings.Repeat("x", 65), "run 1"} {
				if err := s.Append(ctx, id, runstore.Events, 0, lines("x")); !errors.Is(err, runstore.ErrInvalidRunID) {
					t.Errorf("Append(%q) = %v", id, err)
				}
				if _, err := s.Lines(ctx, id, runstore.Events, 0); !errors.Is(err, runstore.ErrInvalidRunID) {
					t.Errorf("Lines(%q) = %v", id, err)
				}
				if err := s.PutCall(ctx, id, 0, []byte("{}")); !errors.Is(err, runstore.ErrInvalidRunID) {
					t.Errorf("PutCall(%q) = %v", id, err)
				}
				if _, _, err := s.Call(ctx, id, 0); !errors.Is(err, runstore.ErrInvalidRunID) {
					t.Errorf("Call(%q) = %v", id, err)
				}
				if err := s.DeleteStream(ctx, id, runstore.Transcript); !errors.Is(err, runstore.ErrInvalidRunID) {
					t.Errorf("DeleteStream(%q) = %v", id, err)
				}
			}
			if err := s.Append(ctx, "run-1", runstore.Stream("../x"), 0, lines("x")); err == nil {
				t.Error("an unknown stream was written")
			}
		})
	}
}

// TestCallsKeepTheFirstRecord: the observation of a tool call is recorded
// once; a second attempt's record does not replace it.
func TestCallsKeepTheFirstRecord(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			if _, ok, err := s.Call(ctx, "run-1", 3); ok || err != nil {
				t.Fatalf("Call before a record = %v, %v", ok, err)
			}
			if err := s.PutCall(ctx, "run-1", 3, []byte(`{"first":true}`)); err != nil {
				t.Fatal(err)
			}
			if err := s.PutCall(ctx, "run-1", 3, []byte(`{"second":true}`)); err != nil {
				t.Fatal(err)
			}
			data, ok, err := s.Call(ctx, "run-1", 3)
			if err != nil || !ok || string(data) != `{"first":true}` {
				t.Fatalf("Call = %s, %v, %v", data, ok, err)
			}
			if _, ok, _ := s.Call(ctx, "run-1", 4); ok {
				t.Fatal("call 4 has a record")
			}
			if err := s.PutCall(ctx, "run-1", -1, []byte("{}")); err == nil {
				t.Fatal("a negative call number was recorded")
			}
			// A record by name keeps its first version too.
			for _, v := range []string{`{"passed":true}`, `{"passed":false}`} {
				if err := s.PutRecord(ctx, "run-1", "setup", []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			if data, ok, err := s.Record(ctx, "run-1", "setup", -1); err != nil || !ok || string(data) != `{"passed":true}` {
				t.Fatalf("Record = %s, %v, %v", data, ok, err)
			}
			if err := s.PutRecord(ctx, "run-1", "../x", []byte("{}")); err == nil {
				t.Fatal("a record name with a path was written")
			}
			// Read with a bound, a record over it is an error.
			if data, ok, err := s.Record(ctx, "run-1", "setup", 15); err != nil || !ok || string(data) != `{"passed":true}` {
				t.Fatalf("Record up to its length = %s, %v, %v", data, ok, err)
			}
			if data, ok, err := s.Record(ctx, "run-1", "setup", 14); err == nil || ok || !strings.Contains(err.Error(), "over its bound of 14 bytes") {
				t.Fatalf("Record up to one byte short = %s, %v, %v", data, ok, err)
			}
			if _, ok, err := s.Record(ctx, "run-1", "none", 14); ok || err != nil {
				t.Fatalf("Record up to a bound of no record = %v, %v", ok, err)
			}
		})
	}
}

// TestCallsRacingKeepOne: attempts of one tool call that record at once
// (a retry while the first attempt still runs) leave one record, the same
// for every reader, before and after the others wrote.
func TestCallsRacingKeepOne(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			seen := make(chan string, 16)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.PutCall(ctx, "run-1", 7, []byte(fmt.Sprintf(`{"attempt":%d}`, i))); err != nil {
						t.Error(err)
					}
					if data, ok, err := s.Call(ctx, "run-1", 7); err == nil && ok {
						seen <- string(data)
					}
				}()
			}
			wg.Wait()
			close(seen)
			first := ""
			for v := range seen {
				if first == "" {
					first = v
				}
				if v != first {
					t.Fatalf("readers saw %q and %q", first, v)
				}
			}
			if data, _, _ := s.Call(ctx, "run-1", 7); string(data) != first || first == "" {
				t.Fatalf("the record is %q, readers saw %q", data, first)
			}
		})
	}
}

// TestBlobsAreCheckedOnRead: a blob reads back under the key PutBlob gave;
// a blob changed in the store is an error that names it, never data, and
// storing the payload again repairs it.
func TestBlobsAreCheckedOnRead(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := runstore.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	payload := bytes.Repeat([]byte("payload "), 1000)
	key, err := s.PutBlob(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Blob(ctx, key); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Blob = %d bytes, %v", len(got), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs", key), []byte("changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	var corrupt *runstore.CorruptError
	if _, err := s.Blob(ctx, key); !errors.As(err, &corrupt) || corrupt.Key != "blobs/"+key {
		t.Fatalf("Blob of a changed blob = %v", err)
	}
	if _, err := s.PutBlob(ctx, payload); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Blob(ctx, key); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Blob after a repair = %d bytes, %v", len(got), err)
	}
	for _, bad := range []string{"", "../runs", strings.Repeat("g", 64)} {
		if _, err := s.Blob(ctx, bad); err == nil {
			t.Errorf("Blob(%q) read something", bad)
		}
	}
}

// TestChangedBatchIsAnError: a batch changed in the store fails the read
// of its stream with a CorruptError; a batch taken away is a gap, an
// error too. Neither returns lines that were not written.
func TestChangedBatchIsAnError(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := runstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, batch := range [][][]byte{lines("a", "b"), lines("c"), lines("d")} {
		if err := s.Append(ctx, "run-1", runstore.Events, []int{0, 2, 3}[i], batch); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "runs", "run-1", "events", "*.jsonl"))
	if err != nil || len(files) != 3 {
		t.Fatalf("batches = %v, %v", files, err)
	}
	if err := os.WriteFile(files[1], []byte("C\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var corrupt *runstore.CorruptError
	if got, err := s.Lines(ctx, "run-1", runstore.Events, 0); !errors.As(err, &corrupt) {
		t.Fatalf("Lines with a changed batch = %q, %v", join(got), err)
	}
	// Lines after the changed batch do not need it.
	if got, err := s.Lines(ctx, "run-1", runstore.Events, 3); err != nil || join(got) != "d" {
		t.Fatalf("Lines from 3 = %q, %v", join(got), err)
	}
	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	var gap *runstore.GapError
	if _, err := s.Lines(ctx, "run-1", runstore.Events, 0); !errors.As(err, &gap) || gap.From != 2 || gap.To != 3 || !strings.Contains(err.Error(), "no lines 2 to 2") {
		t.Fatalf("Lines with a gap = %v, want a GapError of line 2", err)
	}
	// A changed call record is an error too, never the changed data.
	if err := s.PutCall(ctx, "run-1", 0, []byte(`{"content":"84"}`)); err != nil {
		t.Fatal(err)
	}
	call := filepath.Join(dir, "runs", "run-1", "calls", "0000000000.json")
	data, err := os.ReadFile(call)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(call, bytes.Replace(data, []byte("84"), []byte("85"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Call(ctx, "run-1", 0); !errors.As(err, &corrupt) || got != nil {
		t.Fatalf("Call of a changed record = %q, %v", got, err)
	}
	// A temporary file a crash left behind is not a batch.
	if err := os.WriteFile(files[0]+".17ab.tmp", []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "run-1", runstore.Events, 2, lines("c")); err != nil {
		t.Fatalf("the trace has 2 lines before the gap, not the temporary file's: %v", err)
	}
	if got, err := s.Lines(ctx, "run-1", runstore.Events, 0); err != nil || join(got) != "a|b|c|d" {
		t.Fatalf("Lines after the gap is filled = %q, %v", join(got), err)
	}
}

// TestDirectoryIsOwnerOnly: a directory store holds transcripts; its
// directories are its owner's only, and so nothing in it is readable by
// another user, whatever the mode of its files.
func TestDirectoryIsOwnerOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := runstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, "run-1", runstore.Transcript, 0, lines(`{"kind":"task"}`)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "runs"), filepath.Join(dir, "runs", "run-1"), filepath.Join(dir, "runs", "run-1", "transcript")} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
}

// TestDeleteStreamLeavesTheRest: removing a run's transcript (its
// retention) leaves its trace and call records, the other runs' (run-10
// shares run-1's prefix) and the shared blobs.
func TestDeleteStreamLeavesTheRest(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, id := range []string{"run-1", "run-10"} {
				for _, st := range []runstore.Stream{runstore.Events, runstore.Transcript} {
					if err := s.Append(ctx, id, st, 0, lines(id)); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.PutCall(ctx, id, 0, []byte(id)); err != nil {
					t.Fatal(err)
				}
			}
			key, err := s.PutBlob(ctx, []byte("shared"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteStream(ctx, "run-1", runstore.Transcript); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Lines(ctx, "run-1", runstore.Transcript, 0); len(got) != 0 {
				t.Fatalf("run-1 still has its transcript %q", join(got))
			}
			if got, _ := s.Lines(ctx, "run-1", runstore.Events, 0); join(got) != "run-1" {
				t.Fatalf("run-1's trace is %q", join(got))
			}
			if got, _ := s.Lines(ctx, "run-10", runstore.Transcript, 0); join(got) != "run-10" {
				t.Fatalf("run-10's transcript is %q", join(got))
			}
			for _, id := range []string{"run-1", "run-10"} {
				if _, ok, _ := s.Call(ctx, id, 0); !ok {
					t.Fatalf("%s lost its call record", id)
				}
			}
			if _, err := s.Blob(ctx, key); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestConcurrentRuns: runs appended at once from many goroutines each
// read back whole and in order.
func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for r := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("run-%d", r)
					for b := range 5 {
						if err := s.Append(ctx, id, runstore.Events, 2*b, lines(fmt.Sprint(2*b), fmt.Sprint(2*b+1))); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for r := range 8 {
				got, err := s.Lines(ctx, fmt.Sprintf("run-%d", r), runstore.Events, 0)
				if err != nil || join(got) != "0|1|2|3|4|5|6|7|8|9" {
					t.Fatalf("run-%d: %q, %v", r, join(got), err)
				}
			}
		})
	}
}

// TestReadWhileWriting: a follower reads a run's trace while a worker
// appends to it (a directory store's temporary files come and go in the
// listing meanwhile); every read is a prefix of the trace, and nothing fails.
func TestReadWhileWriting(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			n := 200
			if testing.Short() {
				n = 50
			}
			done := make(chan error, 1)
			go func() {
				for i := range n {
					if err := s.Append(ctx, "run-1", runstore.Events, i, lines(fmt.Sprint(i))); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for reading := true; reading; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					reading = false
				default:
				}
				got, err := s.Lines(ctx, "run-1", runstore.Events, 0)
				if err != nil {
					t.Fatalf("read while writing: %v", err)
				}
				for i, l := range got {
					if string(l) != fmt.Sprint(i) {
						t.Fatalf("line %d is %q", i, l)
					}
				}
			}
			if got, err := s.Lines(ctx, "run-1", runstore.Events, 0); err != nil || len(got) != n {
				t.Fatalf("%d lines, %v; want %d", len(got), err, n)
			}
		})
	}
}

// TestOpenRefusesBadLocations: an empty location, a file URL with a host
// or query, and a scheme no linked driver serves are refused; the error
// of a bucket URL never repeats its query (which may hold credentials).
func TestOpenRefusesBadLocations(t *testing.T) {
	ctx := context.Background()
	for _, loc := range []string{"", "file://host/dir", "file:///dir?x=1", "nosuch://bucket?secret=hunter2"} {
		s, err := runstore.Open(ctx, loc)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", loc)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): the error repeats the query: %v", loc, err)
		}
	}
}
