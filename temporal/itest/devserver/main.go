// Command devserver runs an in-process Temporal server (temporaltest, on
// SQLite in memory) until SIGINT or SIGTERM, and prints its frontend
// address and namespace: the Temporal of the load figures, where the
// Temporal CLI cannot be installed. Like the CLI's dev server, it gives each
// task queue one partition, so that a task never waits to be forwarded
// between partitions.
//
//	cd temporal/itest && go run ./devserver
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	one := []dynamicconfig.ConstrainedValue{{Value: 1}}
	dc := dynamicconfig.StaticClient{
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():      one,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():     one,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
	}
	ts := temporaltest.NewServer(temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(dc)))
	fmt.Println(ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
	<-ctx.Done()
	ts.Stop()
}
