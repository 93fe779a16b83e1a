// Command devserver runs an in-process Temporal server (temporaltest, on
// SQLite in memory) until SIGINT or SIGTERM, and prints its frontend
// address and namespace: the Temporal of the load figures, where the Temporal CLI
// cannot be installed.
//
//	cd temporal/itest && go run ./devserver
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/temporaltest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ts := temporaltest.NewServer()
	fmt.Println(ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
	<-ctx.Done()
	ts.Stop()
}
