package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/runner"
)

func serveCmd(ctx context.Context, env *cli.Env, args []string) int {
	for i, a := range args {
		if a = strings.TrimLeft(a, "-"); a == "engine=temporal" || a == "engine" && i+1 < len(args) && args[i+1] == "temporal" {
			return temporalMoved(env.Stderr, "serve --engine temporal", "serve", " (without --engine)")
		}
	}
	return cli.Serve(ctx, env, args, embedded{})
}

// temporalMoved says, in one line, that `specloop what` is `specloop-temporal
// instead` now, and returns the exit status of a usage error.
func temporalMoved(w io.Writer, what, instead, flags string) int {
	fmt.Fprintf(w, "specloop: `specloop %s` is `specloop-temporal %s` now, a command of its own (go install github.com/specloop/specloop/cmd/specloop-temporal@latest), with the same flags%s\n",
		what, instead, flags)
	return exitUsage
}

// embedded is the engine of `specloop serve`: runs execute in its process.
type embedded struct{}

func (embedded) Register(fs *flag.FlagSet) {
	fs.Func("engine", "where runs execute: embedded, in this process, the only engine here (runs as Temporal workflows: specloop-temporal serve)", func(v string) error {
		if v != "embedded" {
			return errors.New("the engine must be embedded")
		}
		return nil
	})
}

func (embedded) About() string {
	return "Runs execute in this process. SIGINT or SIGTERM stops the server gracefully: new runs are refused,\n" +
		"running ones are cancelled and recorded (runs waiting for an approval end interrupted: approval\n" +
		"waits are in memory); after a crash, a restarted server ends the runs that were in flight with exit\n" +
		"reason interrupted. Runs as Temporal workflows, on many machines: `specloop-temporal serve`."
}

func (embedded) Open(string, *slog.Logger) (runner.Engine, func(), error) { return nil, func() {}, nil }
