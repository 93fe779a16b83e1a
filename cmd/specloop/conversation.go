package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/specloop/specloop/runner"
)

// `run --continue RUN_ID` runs the next turn of a conversation: a run of
// its own that starts from the history run RUN_ID ended with, rebuilt from
// the conversation's transcripts (runner.History), and the message. Its
// flags are RUN_ID's, as its request (request.json, resume.go) keeps them,
// each replaced by the flags of that name given now (--script and --model
// as one). Its request keeps those flags whole, paths absolute, and the
// run it continues, so that a later --continue or --resume needs no other.

// notInherited are the flags of one invocation, not of the run: a run
// that continues another does not take them over.
var notInherited = []string{"prompt-file", "trace", "patch", "json", "continue", "resume", "remote", "token-file"}

// modelFlags name the model, one or the other: giving one replaces both.
var modelFlags = []string{"script", "model"}

// pathFlags are the flags whose values are paths.
var pathFlags = []string{"workspace", "script", "system-file", "tools-spec", "trace"}

// recorded wraps a flag's value to note each time the command line sets
// it, a path made absolute against dir.
type recorded struct {
	flag.Value
	name, dir string
	to        *[][2]string
}

func (r *recorded) Set(v string) error {
	if slices.Contains(pathFlags, r.name) && v != "" && v != "-" && !filepath.IsAbs(v) {
		v = filepath.Join(r.dir, v)
	}
	*r.to = append(*r.to, [2]string{r.name, v})
	return r.Value.Set(v)
}

func (r *recorded) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// runFlagsSet parses args, flags of `specloop run`, into f, the paths
// made absolute against dir, and returns the flags they set, in order,
// each a name and a value. The error is that of recorded flags that no
// longer parse; a command line's own were reported when it was parsed.
func runFlagsSet(f *runFlags, args []string, dir string) ([][2]string, error) {
	var set [][2]string
	*f = runFlags{}
	fs := runFlagSet(f)
	fs.VisitAll(func(fl *flag.Flag) { fl.Value = &recorded{Value: fl.Value, name: fl.Name, dir: dir, to: &set} })
	if _, _, done := parseWithPositional(fs, args); done {
		return nil, errors.New("the run's recorded flags no longer parse")
	}
	return set, nil
}

// flagArgs spells the flags set, each a name and a value, as arguments.
func flagArgs(set [][2]string) []string {
	args := make([]string, len(set))
	for i, kv := range set {
		args[i] = "--" + kv[0] + "=" + kv[1]
	}
	return args
}

// continueFlags makes f the flags of the run that continues rq's run: its
// flags, each replaced by those of the same name in now (this command
// line's), and returns them as the arguments the new run's request keeps
// (the flags of one invocation left out, the workspace always in).
func continueFlags(f *runFlags, rq *runRequest, now [][2]string) ([]string, error) {
	replaced := func(kv [2]string) bool {
		return slices.ContainsFunc(now, func(n [2]string) bool {
			return n[0] == kv[0] || slices.Contains(modelFlags, n[0]) && slices.Contains(modelFlags, kv[0])
		})
	}
	recorded, err := runFlagsSet(new(runFlags), rq.Args, rq.Dir)
	if err != nil {
		return nil, err
	}
	merged := slices.Concat(slices.DeleteFunc(recorded, replaced), now)
	if _, err := runFlagsSet(f, flagArgs(merged), ""); err != nil {
		return nil, err
	}
	ws, err := filepath.Abs(f.workspace)
	if err != nil {
		return nil, err
	}
	kept := slices.DeleteFunc(merged, func(kv [2]string) bool { return slices.Contains(notInherited, kv[0]) || kv[0] == "workspace" })
	return append([]string{"--workspace=" + ws}, flagArgs(kept)...), nil
}

// conversation returns the runs of the conversation up to run id, oldest
// first, to rebuild its history from, and run id's request.
func conversation(id string) ([]runner.Turn, *runRequest, error) {
	var turns []runner.Turn
	var last *runRequest
	for id != "" {
		if len(turns) == 100000 {
			return nil, nil, errors.New("the conversation's requests continue each other in a loop")
		}
		rq, path, err := loadRunRequest(id)
		if err != nil {
			return nil, nil, err
		}
		var g runFlags
		if _, err := runFlagsSet(&g, rq.Args, rq.Dir); err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", id, err)
		}
		// The model of a recorded run is asked nothing: only its context
		// window counts, to compact where the run did.
		m, _ := openModel(&g)
		sp := runner.Spec{CreateRunRequest: g.request("-", nil)}
		turns = append(turns, runner.Turn{Transcript: path, Spec: sp, Model: m})
		if last == nil {
			last = rq
		}
		id = rq.Continues
	}
	slices.Reverse(turns)
	return turns, last, nil
}
