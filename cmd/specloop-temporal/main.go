// Command specloop-temporal runs specloop's runs as Temporal workflows:
// `specloop-temporal serve` is `specloop serve` (the same HTTP API, flags
// and web page) with the runs on a Temporal cluster, executed by
// `specloop-temporal worker` processes on any number of machines. It is a
// command of its own so that `specloop`, which most people run without
// Temporal, does not carry the Temporal SDK.
package main

import (
	"context"
	"io"

	"github.com/specloop/specloop/cmd/internal/cli"
)

func main() { cli.Main(run) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	p := cli.Program{Name: "specloop-temporal",
		About: "specloop-temporal runs specloop's runs as Temporal workflows: durable runs that survive a worker's\n" +
			"death, a redeploy of the API server and an approval that waits for days, on any number of machines.",
		Commands: []cli.Command{
			{Name: "serve", Summary: "serve the HTTP API of `specloop serve`, with the runs on Temporal", Run: serveCmd},
			{Name: "worker", Summary: "execute the runs of serve on this machine's workspaces", Run: workerCmd},
		}}
	return p.Run(ctx, args, stdin, stdout, stderr)
}

func serveCmd(ctx context.Context, env *cli.Env, args []string) int {
	return cli.Serve(ctx, env, args, &temporalFlags{})
}
