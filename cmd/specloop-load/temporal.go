//go:build unix

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
// the server's and the worker's), with the store next to the data.
func temporalEngine(cfg *server.Config) (stop func(), err error) {
	addr := os.Getenv("LOAD_TEMPORAL")
	if addr == "" {
		return func() {}, nil
	}
	store, err := temporal.NewStore(filepath.Join(filepath.Dir(cfg.DataDir), "store"))
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: os.Getenv("LOAD_TEMPORAL_NAMESPACE"), DataConverter: store.DataConverter(0), Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal: %w", err)
	}
	queue := fmt.Sprintf("load-%d", os.Getpid())
	acts := &temporal.Activities{Store: store, WorkspaceRoot: cfg.WorkspaceRoot, HostQueue: queue + "-host", Models: runner.DefaultModels,
		Setup: wiring.Config{DisableCommands: true, Sandbox: sandbox.Policy{Backend: sandbox.None}}}
	shared, host := temporal.NewWorkers(c, queue, acts, worker.Options{})
	if err := errors.Join(shared.Start(), host.Start()); err != nil {
		c.Close()
		return nil, err
	}
	cfg.Engine = &temporal.Engine{Client: c, TaskQueue: queue, Store: store, Poll: 10 * time.Millisecond}
	return func() { shared.Stop(); host.Stop(); c.Close() }, nil
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
