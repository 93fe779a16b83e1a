package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/transcript"
)

// A run keeps its transcript in the data directory, redacted of the
// runner's secrets; a request with transcript false keeps none.
func TestRunsKeepTranscriptsInTheDataDirectory(t *testing.T) {
	t.Parallel()
	const token = "server-token-0123456789"
	data := t.TempDir()
	rn, err := runner.New(runner.Config{DataDir: data, WorkspaceRoot: t.TempDir(), Secrets: []string{token}})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Shutdown(context.Background())
	req := script(t, `{"type":"finish","answer":"the token is `+token+`"}`)
	req.Task.Prompt = "what is the token?"
	kept, err := rn.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	off := script(t, `{"type":"finish","answer":"done"}`)
	off.Transcript = new(bool)
	none, err := rn.Create(context.Background(), off)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rn, kept.Id, finished)
	waitFor(t, rn, none.Id, finished)

	f, err := os.Open(filepath.Join(data, "transcripts", kept.Id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := transcript.Render(&out, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "task: what is the token?") || !strings.Contains(out.String(), "the token is [REDACTED]") || strings.Contains(out.String(), token) {
		t.Fatalf("the transcript:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(data, "transcripts", none.Id+".jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a run with transcript false kept one (%v)", err)
	}
}

// A runner removes the transcripts of runs that finished longer ago than
// its TranscriptRetention, and keeps the run and the younger ones.
func TestTranscriptRetention(t *testing.T) {
	t.Parallel()
	data, root := t.TempDir(), t.TempDir()
	rn, err := runner.New(runner.Config{DataDir: data, WorkspaceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rn.Create(context.Background(), script(t, `{"type":"finish","answer":"done"}`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rn, r.Id, finished)
	if err := rn.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data, "transcripts", r.Id+".jsonl")
	for _, tc := range []struct {
		retention time.Duration
		kept      bool
	}{{1000 * time.Hour, true}, {0, true}, {time.Nanosecond, false}} {
		rn, err := runner.New(runner.Config{DataDir: data, WorkspaceRoot: root, TranscriptRetention: tc.retention})
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(path)
		_, getErr := rn.Transcript(r.Id, 0)
		if run, err := rn.Get(r.Id); err != nil || run.Status != gen.RunStatusFinished {
			t.Errorf("retention %v: the run is gone: %+v", tc.retention, run)
		}
		if err := rn.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if kept := statErr == nil && getErr == nil; kept != tc.kept {
			t.Fatalf("retention %v: transcript kept %v (stat %v, get %v), want %v", tc.retention, kept, statErr, getErr, tc.kept)
		}
	}
}
