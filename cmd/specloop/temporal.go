package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/temporal"
	"github.com/specloop/specloop/wiring"
)

// temporalFlags connect serve (with --engine temporal) and worker to a
// Temporal cluster and to the store they share.
type temporalFlags struct {
	engine    string
	address   string
	namespace string
	queue     string
	store     string
	threshold int
	heartbeat time.Duration
}

// register adds the flags; serve also gets --engine.
func (f *temporalFlags) register(fs *flag.FlagSet, serve bool) {
	if serve {
		fs.StringVar(&f.engine, "engine", "embedded", "where runs execute: embedded (in this process) or temporal (as Temporal workflows, on `specloop worker` processes)")
	}
	fs.StringVar(&f.address, "temporal-address", "127.0.0.1:7233", "the Temporal frontend (HOST:PORT)")
	fs.StringVar(&f.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&f.queue, "task-queue", "specloop", "the shared Temporal task queue of the runs")
	fs.StringVar(&f.store, "store", "", "the directory shared by API servers and workers: run events, tool call records, large payloads; it must lie outside --workspace-root (default: "+stateDirUsage("store")+", which suits one machine only)")
	fs.IntVar(&f.threshold, "payload-threshold", temporal.DefaultRefThreshold, "payloads over this many bytes go to --store, not into workflow history (the same on every process)")
	fs.DurationVar(&f.heartbeat, "heartbeat-timeout", temporal.DefaultHeartbeatTimeout, "how long a worker may go silent in a tool call before the call moves to another worker of its host")
}

// dial opens the store and connects to Temporal.
func (f *temporalFlags) dial(logger *slog.Logger) (client.Client, *temporal.Store, error) {
	store, err := temporal.NewStore(f.store)
	if err != nil {
		return nil, nil, fmt.Errorf("--store: %w", err)
	}
	c, err := client.Dial(client.Options{HostPort: f.address, Namespace: f.namespace,
		DataConverter: store.DataConverter(f.threshold), Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to Temporal at %s: %w", f.address, err)
	}
	return c, store, nil
}

// serverEngine returns the engine serve's flags ask for: nil for the
// embedded one, and the func that releases it.
func (f *temporalFlags) serverEngine(logger *slog.Logger) (runner.Engine, func(), error) {
	switch f.engine {
	case "embedded":
		return nil, func() {}, nil
	case "temporal":
		c, store, err := f.dial(logger)
		if err != nil {
			return nil, nil, err
		}
		return &temporal.Engine{Client: c, TaskQueue: f.queue, Store: store, HeartbeatTimeout: f.heartbeat}, c.Close, nil
	}
	return nil, nil, errors.New("--engine must be embedded or temporal")
}

func workerCmd(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlagSet(env, "worker", "[flags]",
		"Executes the runs of `specloop serve --engine temporal`: polls --task-queue for workflows and for\n"+
			"the activities any worker can run (opening a run, model calls), and this host's queue for the tool\n"+
			"calls, checks and patches of the runs whose workspace is under --workspace-root here. Workers with\n"+
			"the same --host-queue (by default: the same host name and workspace root) stand in for each other:\n"+
			"when one dies, another retries its tool call, which returns the recorded observation if the call\n"+
			"had completed. --store must be the directory the API servers use. Model keys come from the\n"+
			"environment, as for serve. SIGINT or SIGTERM stops the worker; its runs go on elsewhere.")
	var tf temporalFlags
	tf.register(fs, false)
	root := fs.String("workspace-root", ".", "the directory that holds the runs' workspaces; runs may read and write all of it, so --store must lie outside it")
	hostQueue := fs.String("host-queue", "", "this host's task queue (default: --task-queue@HOSTNAME:ROOT-HASH)")
	allowCommands := fs.Bool("allow-commands", false, "offer run_command to runs and allow completion checks")
	var sbFlags sandboxFlags
	sbFlags.register(fs)
	var mcpf mcpFlags
	mcpf.register(fs, "an external MCP server runs may name (mcp_servers: [NAME]), as serve's --mcp: give the workers the API servers' --mcp; repeatable")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		env.errorf("worker: unexpected argument %q", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	policy, err := sbFlags.policy()
	if err != nil {
		env.errorf("worker: %v", err)
		return exitUsage
	}
	mcpServers, err := mcpf.servers()
	if err != nil {
		env.errorf("worker: %v", err)
		return exitUsage
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		env.errorf("worker: --workspace-root: %v", err)
		return exitUsage
	}
	if *hostQueue == "" {
		host, err := os.Hostname()
		if err != nil {
			env.errorf("worker: %v", err)
			return exitInternal
		}
		sum := sha256.Sum256([]byte(abs))
		*hostQueue = tf.queue + "@" + host + ":" + hex.EncodeToString(sum[:6])
	}
	if tf.store, err = recordsDir("--store", tf.store, "store", abs); err != nil {
		env.errorf("worker: %v", err)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, store, err := tf.dial(logger)
	if err != nil {
		env.errorf("worker: %v", err)
		return exitInternal
	}
	defer c.Close()
	acts := &temporal.Activities{Store: store, WorkspaceRoot: abs, HostQueue: *hostQueue, Models: runner.DefaultModels,
		Setup: wiring.Config{DisableCommands: !*allowCommands, Sandbox: policy}, MCPServers: mcpServers, MCP: mcpf.config(env.stderr)}
	shared, host := temporal.NewWorkers(c, tf.queue, acts, worker.Options{})
	for _, w := range []worker.Worker{shared, host} {
		if err := w.Start(); err != nil {
			env.errorf("worker: %v", err)
			return exitInternal
		}
		defer w.Stop()
	}
	fmt.Fprintf(env.stderr, "worker: polling %s and %s\n", tf.queue, *hostQueue)
	<-ctx.Done()
	return exitOK
}
