package main

import (
	"context"
	"os"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/trace"
)

func traceCmd(_ context.Context, env *cli.Env, args []string) int {
	env = runText(env)
	fs := env.FlagSet("trace show", "FILE",
		"Prints a JSONL trace for a person, one event a line, in file order. It only reads the file.\n"+
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
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		env.Errorf("%v", err)
		return exitUsage
	}
	defer f.Close()
	log, rerr := trace.Read(f)
	if err := trace.Show(env.Stdout, log); err != nil {
		return exitInternal
	}
	if rerr != nil {
		env.Errorf("%s: %v", fs.Arg(0), rerr)
		return exitInternal
	}
	return exitOK
}
