//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/temporal"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// temporalEngine puts the child server on the Temporal engine when
// LOAD_TEMPORAL names a Temporal frontend: runs become workflows, executed
// by a worker started in the same process (so the server's CPU figure is
// the server's and the worker's), or, with LOAD_TEMPORAL_WORKERS > 0, by
// that many worker processes (temporalWorkers), with the store next to the
// data.
func temporalEngine(cfg *server.Config) (stop func(), err error) {
	if os.Getenv("LOAD_TEMPORAL") == "" {
		return func() {}, nil
	}
	c, store, acts, err := dialTemporal(filepath.Dir(cfg.DataDir), cfg.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	// As `specloop-temporal serve` does: the runs' workflows carry the
	// search attributes of the one run index.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := temporal.RegisterSearchAttributes(ctx, c, os.Getenv("LOAD_TEMPORAL_NAMESPACE")); err != nil {
		c.Close()
		return nil, err
	}
	queue := os.Getenv("LOAD_QUEUE")
	cfg.Engine = &temporal.Engine{Client: c, TaskQueue: queue, Store: store, Poll: 10 * time.Millisecond}
	if n, _ := strconv.Atoi(os.Getenv("LOAD_TEMPORAL_WORKERS")); n > 0 {
		return c.Close, nil
	}
	shared, host := temporal.NewWorkers(c, queue, acts, worker.Options{})
	if err := errors.Join(shared.Start(), host.Start()); err != nil {
		c.Close()
		return nil, err
	}
	return func() { shared.Stop(); host.Stop(); c.Close() }, nil
}

// dialTemporal connects to LOAD_TEMPORAL with the store under dir and
// returns the activities of a worker of the workspaces under root.
func dialTemporal(dir, root string) (client.Client, *temporal.Store, *temporal.Activities, error) {
	store, err := temporal.NewStore(filepath.Join(dir, "store"))
	if err != nil {
		return nil, nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c, err := client.Dial(client.Options{HostPort: os.Getenv("LOAD_TEMPORAL"), Namespace: os.Getenv("LOAD_TEMPORAL_NAMESPACE"), DataConverter: store.DataConverter(0), Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connect to Temporal: %w", err)
	}
	acts := &temporal.Activities{Store: store, WorkspaceRoot: root, HostQueue: os.Getenv("LOAD_QUEUE") + "-host", SystemModels: runner.ModelsWithSystem,
		Setup: wiring.Config{DisableCommands: true, Sandbox: sandbox.Policy{Backend: sandbox.None}}}
	return c, store, acts, nil
}

// startWorkers starts n worker processes (this binary with -worker) for
// the server whose data and workspaces are under dir.
func startWorkers(dir string, n int) ([]*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var ws []*exec.Cmd
	for range n {
		cmd := exec.Command(exe, "-worker")
		cmd.Env = append(os.Environ(), "LOAD_DIR="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return ws, err
		}
		ws = append(ws, cmd)
	}
	return ws, nil
}

// serveWorker is a worker process: the shared and host workers of the
// server's queue, until SIGTERM.
func serveWorker() int {
	dir := os.Getenv("LOAD_DIR")
	c, _, acts, err := dialTemporal(dir, filepath.Join(dir, "root"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	shared, host := temporal.NewWorkers(c, os.Getenv("LOAD_QUEUE"), acts, worker.Options{})
	if err := errors.Join(shared.Start(), host.Start()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	shared.Stop()
	host.Stop()
	return 0
}

// stepLatencies returns, for each run traced in dir, its duration (from
// run_started to run_finished) per step.
func stepLatencies(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		log, err := trace.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		evs := log.Events
		if len(evs) < 2 || evs[len(evs)-1].StepsUsed == nil || *evs[len(evs)-1].StepsUsed == 0 {
			continue
		}
		out = append(out, evs[len(evs)-1].Time.Sub(evs[0].Time)/time.Duration(*evs[len(evs)-1].StepsUsed))
	}
	slices.Sort(out)
	return out, nil
}
