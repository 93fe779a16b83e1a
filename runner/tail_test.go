package runner_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/trace"
)

// A Tail hands over each line once it is whole, lines it handed over stay
// as they were, and a line past trace.MaxLineBytes (a writer gone wrong)
// is an error, whether it is whole or still growing.
func TestTailHandsOverWholeLinesWithinTheBound(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	tail := &runner.Tail{Path: path}
	var got [][]byte
	collect := func(line []byte) error { got = append(got, line); return nil }
	if err := tail.Lines(collect); err != nil || len(got) != 0 {
		t.Fatalf("no file yet: %q %v", got, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("one\ntw")
	if err := tail.Lines(collect); err != nil || len(got) != 1 {
		t.Fatalf("first read: %q %v", got, err)
	}
	f.WriteString("o\n" + strings.Repeat("x", 100<<10) + "\n")
	if err := tail.Lines(collect); err != nil || len(got) != 3 {
		t.Fatalf("second read: %d lines, %v", len(got), err)
	}
	if string(got[0]) != "one" || string(got[1]) != "two" || !bytes.Equal(got[2], bytes.Repeat([]byte("x"), 100<<10)) {
		t.Fatalf("lines %q %q (%d bytes)", got[0], got[1], len(got[2]))
	}
	f.WriteString(strings.Repeat("y", trace.MaxLineBytes+1))
	if err := tail.Lines(collect); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("a line past the bound: %v", err)
	}
}
