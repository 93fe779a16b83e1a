package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// transcriptSince sends a line only once it is whole: a line the writer is
// still writing waits for the next call, a line a crash cut short (and
// that does not parse) is skipped, and an entry at or before the
// cursor's seq is not sent again.
func TestTranscriptTailWholeLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tail := &Tail{Path: path}
	c := cursor{pos: 2, seq: 1, content: true}
	if buf, _, err := transcriptSince(tail, nil, c); err != nil || len(buf) != 0 {
		t.Fatalf("no file yet: %q %v", buf, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"seq":1,"task":"old"}` + "\n" + `{"seq":2,"text":"he`)
	buf, c, err := transcriptSince(tail, nil, c)
	if err != nil || len(buf) != 0 || c.seq != 1 {
		t.Fatalf("before the line is whole: %q %+v %v", buf, c, err)
	}
	write(`llo"}` + "\n" + `{"torn` + "\n" + `{"seq":3}` + "\n")
	buf, c, err = transcriptSince(tail, nil, c)
	want := "id: 2:2\nevent: transcript\ndata: {\"seq\":2,\"text\":\"hello\"}\n\n" +
		"id: 2:3\nevent: transcript\ndata: {\"seq\":3}\n\n"
	if err != nil || string(buf) != want || c.seq != 3 {
		t.Fatalf("got %q %+v %v, want %q", buf, c, err, want)
	}
	if buf, _, _ := transcriptSince(tail, nil, c); len(buf) != 0 {
		t.Fatalf("nothing new: %q", buf)
	}
}
