package main

import (
	"context"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/trace"
)

func traceCmd(_ context.Context, env *cli.Env, args []string) int {
	env = runText(env)
	fs := env.FlagSet("trace show", "FILE|RUN_ID",
		"Prints a JSONL trace for a person, one event a line, in file order: FILE, or the trace of a local\n"+
			"run RUN_ID in "+cli.StateDirUsage("runs/RUN_ID/trace.jsonl")+". It only reads the file.\n"+
			"A torn last line (a crash mid-write) is reported after the events before it.")
	sub := len(args) > 0 && args[0] == "show"
	if sub {
		args = args[1:]
	}
	if code, done := cli.ParseFlags(fs, args); done {
		return code
	}
	if !sub || fs.NArg() != 1 {
		return cli.Usagef(fs, "expected show and one FILE")
	}
	path, err := runRecord(fs.Arg(0), traceFile, "trace")
	if err != nil {
		return env.Fail(exitUsage, "%v", err)
	}
	return printRecord(env, "", path, trace.Read, trace.Show)
}

// traceFile is the name of a local run's trace in its records directory.
const traceFile = "trace.jsonl"
