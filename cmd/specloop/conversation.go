package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/runner"
)

// A run of `specloop run` keeps, beside its transcript, its record
// (runs/RUN_ID/run.json, 0600 in the 0700 directory of the transcript,
// outside the workspace): the flags it ran with and the run it continues.
// `run --continue RUN_ID` runs the next turn of the conversation with
// them, the flags given now replacing the recorded ones of the same name;
// `run --resume RUN_ID` would run a run again with them.

// recordName is the file of a run's record, beside its transcript.
const recordName = "run.json"

// runRecord is what `specloop run` keeps of a run.
type runRecord struct {
	// Flags are the run's flags as they were set, in order, each a name
	// and a value; paths are absolute, and the flags of one invocation
	// only (prompt-file, trace, json, continue) are left out.
	Flags [][2]string `json:"flags"`
	// Continues is the run this one continues (run --continue).
	Continues string `json:"continues,omitempty"`
}

// notRecorded are the flags of one invocation, not of the run.
var notRecorded = []string{"prompt-file", "trace", "json", "continue", "remote", "token-file"}

// modelFlags name the model, one or the other: giving one replaces both.
var modelFlags = []string{"script", "model"}

// pathFlags are the flags whose values are paths, recorded absolute.
var pathFlags = []string{"workspace", "script", "system-file", "tools-spec"}

// recordPath is where run id's record is.
func recordPath(id string) (string, error) {
	if !ident.Plain(id) {
		return "", fmt.Errorf("%q is not a run id", id)
	}
	dir, err := cli.StateDir("runs")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, id, recordName), nil
}

// saveRunRecord writes run id's record (0600, its directory 0700).
func saveRunRecord(id string, rec runRecord) error {
	path, err := recordPath(id)
	if err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// loadRunRecord reads run id's record.
func loadRunRecord(id string) (runRecord, error) {
	var rec runRecord
	path, err := recordPath(id)
	if err != nil {
		return rec, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, fmt.Errorf("no run %s of specloop run keeps a record in %s (a run with --no-transcript keeps none)", id, filepath.Dir(filepath.Dir(path)))
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// recorded wraps a flag's value to note each time the command line sets
// it.
type recorded struct {
	flag.Value
	name string
	to   *[][2]string
}

func (r *recorded) Set(v string) error {
	*r.to = append(*r.to, [2]string{r.name, v})
	return r.Value.Set(v)
}

func (r *recorded) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// runFlagsSet returns the flags of `specloop run` that args set, in
// order, the paths made absolute.
// args parsed already: their errors were reported.
func runFlagsSet(args []string) [][2]string {
	var set [][2]string
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	new(runFlags).register(fs)
	fs.VisitAll(func(fl *flag.Flag) { fl.Value = &recorded{Value: fl.Value, name: fl.Name, to: &set} })
	parseWithPositional(fs, args)
	for i, kv := range set {
		if slices.Contains(pathFlags, kv[0]) && kv[1] != "" {
			if abs, err := filepath.Abs(kv[1]); err == nil {
				set[i][1] = abs
			}
		}
	}
	return set
}

// newRunRecord is the record of a run with flags set and f: those of
// one invocation left out, the workspace always in (absolute).
func newRunRecord(f *runFlags, set [][2]string) runRecord {
	rec := runRecord{Flags: slices.DeleteFunc(slices.Clone(set), func(kv [2]string) bool { return slices.Contains(notRecorded, kv[0]) }), Continues: f.continueID}
	if !slices.ContainsFunc(rec.Flags, func(kv [2]string) bool { return kv[0] == "workspace" }) {
		ws, _ := filepath.Abs(f.workspace)
		rec.Flags = append(rec.Flags, [2]string{"workspace", ws})
	}
	return rec
}

// continueRun makes f the flags of the run that continues run
// f.continueID (its recorded flags, with those of now, this command
// line's, in place of the same names) and returns them, with the runs of
// the conversation up to it, oldest first, to rebuild its history from.
func continueRun(f *runFlags, now [][2]string) ([][2]string, []runner.Turn, error) {
	var turns []runner.Turn
	var last runRecord
	for id := f.continueID; id != ""; {
		if len(turns) == 100000 {
			return nil, nil, errors.New("the conversation's records continue each other in a loop")
		}
		path, err := runTranscriptPath(id)
		if err != nil {
			return nil, nil, err
		}
		rec, err := loadRunRecord(id)
		if err != nil {
			return nil, nil, err
		}
		if _, err := os.Stat(path); err != nil {
			return nil, nil, fmt.Errorf("run %s kept no transcript to continue from: %w", id, err)
		}
		var g runFlags
		if err := setFlags(&g, rec.Flags); err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", id, err)
		}
		// The model of a recorded run is asked nothing: only its context
		// window counts, to compact where the run did.
		m, _ := openModel(&g)
		policy := gen.ApprovalPolicy(g.approval.policy)
		sp := runner.Spec{CreateRunRequest: g.request("-", nil, policy, policy != gen.ApprovalPolicyNever)}
		turns = append(turns, runner.Turn{Transcript: path, Spec: sp, Model: m})
		if len(turns) == 1 {
			last = rec
		}
		id = rec.Continues
	}
	slices.Reverse(turns)
	given := func(kv [2]string) bool {
		return slices.ContainsFunc(now, func(n [2]string) bool {
			return n[0] == kv[0] || slices.Contains(modelFlags, n[0]) && slices.Contains(modelFlags, kv[0])
		})
	}
	merged := slices.Concat(slices.DeleteFunc(slices.Clone(last.Flags), given), now)
	return merged, turns, setFlags(f, merged)
}

// setFlags makes f the flags of `specloop run` that set sets, in order,
// over their defaults.
func setFlags(f *runFlags, set [][2]string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var g runFlags
	g.register(fs)
	for _, kv := range set {
		if err := fs.Set(kv[0], kv[1]); err != nil {
			return fmt.Errorf("--%s of the run's record: %w", kv[0], err)
		}
	}
	*f = g
	return nil
}
