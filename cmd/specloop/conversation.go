package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
// order, each a name and a value, the paths made absolute against dir.
// args parsed already: their errors were reported.
func runFlagsSet(args []string, dir string) [][2]string {
	var set [][2]string
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	new(runFlags).register(fs)
	fs.VisitAll(func(fl *flag.Flag) { fl.Value = &recorded{Value: fl.Value, name: fl.Name, to: &set} })
	parseWithPositional(fs, args)
	for i, kv := range set {
		if slices.Contains(pathFlags, kv[0]) && kv[1] != "" && kv[1] != "-" && !filepath.IsAbs(kv[1]) {
			set[i][1] = filepath.Join(dir, kv[1])
		}
	}
	return set
}

// setFlags makes f the flags of `specloop run` that set sets, in order,
// over their defaults.
func setFlags(f *runFlags, set [][2]string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var g runFlags
	g.register(fs)
	for _, kv := range set {
		if err := fs.Set(kv[0], kv[1]); err != nil {
			return fmt.Errorf("--%s of the run's request: %w", kv[0], err)
		}
	}
	*f = g
	return nil
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
	merged := slices.Concat(slices.DeleteFunc(runFlagsSet(rq.Args, rq.Dir), replaced), now)
	if err := setFlags(f, merged); err != nil {
		return nil, err
	}
	ws, err := filepath.Abs(f.workspace)
	if err != nil {
		return nil, err
	}
	args := []string{"--workspace=" + ws}
	for _, kv := range merged {
		if !slices.Contains(notInherited, kv[0]) && kv[0] != "workspace" {
			args = append(args, "--"+kv[0]+"="+kv[1])
		}
	}
	return args, nil
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
		if err := setFlags(&g, runFlagsSet(rq.Args, rq.Dir)); err != nil {
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
