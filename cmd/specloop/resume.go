package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/transcript"
)

// requestFile is, beside a run's transcript in the state directory, what
// `specloop run --resume` needs to go on with it: the run's command line,
// the directory it ran in and its task.
const requestFile = "request.json"

// runRequest is a local run's command line, kept for --resume.
type runRequest struct {
	ID     string   `json:"id"`
	Dir    string   `json:"dir"`    // the working directory it ran in
	Args   []string `json:"args"`   // the arguments of specloop run
	Prompt string   `json:"prompt"` // the task, however it was given
	// Continues is the run this one continues (run --continue); then
	// Prompt is the person's message and Args are the run's whole flags.
	Continues string `json:"continues,omitempty"`
}

// keepRunRequest writes rq beside the transcript at transcriptPath
// (0600, in the run's 0700 directory).
func keepRunRequest(transcriptPath string, rq *runRequest) error {
	data, err := json.Marshal(rq)
	if err != nil {
		return err
	}
	dir := filepath.Dir(transcriptPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, requestFile), data, 0o600)
}

// resumeFlags turns `run --resume RUN_ID` into the run's own flags and
// task, read from its request in the state directory: set holds what was
// given, which must be --resume alone. Paths of the recorded flags are
// taken from the directory the run ran in (runFlagsSet).
func resumeFlags(set *flag.FlagSet, f *runFlags, positional string) (*runRequest, error) {
	other := positional != ""
	set.Visit(func(fl *flag.Flag) { other = other || fl.Name != "resume" })
	if other {
		return nil, errors.New("--resume RUN_ID goes on with the run's own flags and task: give nothing else")
	}
	rq, _, err := loadRunRequest(f.resume)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	if _, err := runFlagsSet(f, rq.Args, rq.Dir); err != nil {
		return nil, fmt.Errorf("--resume: %w", err)
	}
	f.promptFile, f.resume = "", rq.ID
	return rq, nil
}

// loadRunRequest reads the request of run id of specloop run, and
// returns it with the path of the run's transcript.
func loadRunRequest(id string) (*runRequest, string, error) {
	if !ident.Plain(id) {
		return nil, "", fmt.Errorf("%q is not a run id", id)
	}
	path, err := runFile(id, transcript.FileName)
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(path), requestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("no run %s of specloop run keeps its request in %s (a run with --no-transcript or --remote keeps none)", id, filepath.Dir(filepath.Dir(path)))
	}
	var rq runRequest
	if err == nil {
		err = json.Unmarshal(data, &rq)
	}
	if err != nil {
		return nil, "", fmt.Errorf("run %s's request: %w", id, err)
	}
	return &rq, path, nil
}
