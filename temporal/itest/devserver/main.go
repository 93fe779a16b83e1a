// Command devserver runs an in-process Temporal server until SIGINT or
// SIGTERM, and prints its frontend address and namespace: the Temporal of
// the load figures, where the Temporal CLI cannot be installed. By default
// it is temporaltest, on SQLite in memory; with -postgres it is the server
// on a throwaway PostgreSQL cluster (package pgtemporal: persistence and
// visibility on PostgreSQL, the schema set up by temporal-sql-tool), with
// PostgreSQL's durable defaults unless -postgres-nosync. Like the CLI's
// dev server, it gives each task queue one partition, so that a task never
// waits to be forwarded between partitions.
//
//	cd temporal/itest && go run ./devserver
//	cd temporal/itest && go run ./devserver -postgres
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/specloop/specloop/temporal/itest/pgtemporal"
)

func main() {
	postgres := flag.Bool("postgres", false, "run the server on a throwaway PostgreSQL cluster instead of SQLite in memory")
	nosync := flag.Bool("postgres-nosync", false, "with -postgres: fsync, synchronous_commit and full_page_writes off")
	logFile := flag.String("log", "", "with -postgres: the file the server logs its warnings and errors to")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dc := pgtemporal.OnePartition()
	if !*postgres {
		ts := temporaltest.NewServer(temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(dc)))
		fmt.Println(ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
		<-ctx.Done()
		ts.Stop()
		return
	}
	if err := runPostgres(ctx, dc, pgtemporal.Durability(!*nosync), *logFile); err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
}

func runPostgres(ctx context.Context, dc dynamicconfig.StaticClient, d pgtemporal.Durability, logFile string) error {
	pg, err := pgtemporal.StartPostgres(d)
	if err != nil {
		return err
	}
	defer pg.Stop()
	tools, err := os.MkdirTemp("", "devserver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tools)
	if err := pg.SetupSchema(tools); err != nil {
		return err
	}
	srv, err := pgtemporal.StartServer(pg, "default", dc, logFile)
	if err != nil {
		return err
	}
	fmt.Println(srv.HostPort, "default")
	<-ctx.Done()
	return srv.Stop()
}
