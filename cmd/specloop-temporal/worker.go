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
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/temporal"
	"github.com/specloop/specloop/wiring"
)

// temporalFlags connect serve and worker to a Temporal cluster and to the
// store they share; they are serve's engine (cli.Engine).
type temporalFlags struct {
	address   string
	namespace string
	queue     string
	store     string
	threshold int
	heartbeat time.Duration
	conn      connFlags
}

// registerShared adds the flags serve and worker share.
func (f *temporalFlags) registerShared(fs *flag.FlagSet) {
	fs.StringVar(&f.address, "temporal-address", "127.0.0.1:7233", "the Temporal frontend (HOST:PORT)")
	fs.StringVar(&f.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&f.queue, "task-queue", "specloop", "the shared Temporal task queue of the runs")
	fs.StringVar(&f.store, "store", "", "where API servers and workers keep run events, transcripts, tool call records and large payloads: a directory outside --workspace-root (default: "+cli.StateDirUsage("store")+", which suits one machine only), or an object store every process reaches: s3://BUCKET, gs://BUCKET, azblob://CONTAINER (credentials from the provider's usual environment)")
	fs.IntVar(&f.threshold, "payload-threshold", temporal.DefaultRefThreshold, "payloads over this many bytes go to --store, not into workflow history (the same on every process)")
	f.conn.register(fs)
}

// Register adds serve's Temporal flags: the shared ones and those a run's
// workflow gets when the run starts, which only an API server's value
// decides.
func (f *temporalFlags) Register(fs *flag.FlagSet) {
	f.registerShared(fs)
	fs.DurationVar(&f.heartbeat, "heartbeat-timeout", temporal.DefaultHeartbeatTimeout, "how long a worker may go silent in a tool call before the call moves to another worker of its host (each run's workflow gets the value of the API server that started it)")
}

func (*temporalFlags) About() string {
	return "Runs execute as Temporal workflows (--temporal-address, --namespace, --task-queue) on\n" +
		"`specloop-temporal worker` processes, which open the workspaces under their own --workspace-root;\n" +
		"--store is what API servers and workers share: an object store, or a directory outside --workspace-root.\n" +
		"SIGINT or SIGTERM stops the server gracefully: new runs are refused, and the running ones go on in\n" +
		"Temporal (approval waits are durable); a server started on the same --data follows them again."
}

// Open checks --store against root and connects serve to Temporal.
func (f *temporalFlags) Open(root string, logger *slog.Logger) (runner.Engine, func(), error) {
	var err error
	if f.store, err = storeLocation(f.store, root); err != nil {
		return nil, nil, err
	}
	c, store, err := f.dial(logger)
	if err != nil {
		return nil, nil, err
	}
	if err := store.CheckCache(root); err != nil {
		c.Close()
		store.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = temporal.RegisterSearchAttributes(ctx, c, f.namespace)
	if errors.Is(err, temporal.ErrNoOperatorPermission) {
		// An API server with a client's rights only: the operator has
		// registered them, or Temporal refuses the runs' workflows,
		// naming the attribute.
		logger.Warn("the runs' search attributes could not be checked: until an operator registers them (docs/temporal.md), Temporal refuses to start runs", "err", err)
		err = nil
	}
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%w (or register them with `temporal operator search-attribute create`, docs/temporal.md)", err)
	}
	return &temporal.Engine{Client: c, TaskQueue: f.queue, Store: store, HeartbeatTimeout: f.heartbeat, Log: logger}, c.Close, nil
}

// storeLocation is --store checked against the workspace root: a bucket
// URL as it is, a directory (a path or file:// URL) outside root.
func storeLocation(loc, root string) (string, error) {
	if scheme, _, ok := strings.Cut(loc, "://"); ok && scheme != "file" && !strings.ContainsAny(scheme, `/\`) {
		return loc, nil
	}
	return cli.RecordsDir("--store", strings.TrimPrefix(loc, "file://"), "store", root)
}

// dial opens the store and connects to Temporal.
func (f *temporalFlags) dial(logger *slog.Logger) (client.Client, *temporal.Store, error) {
	conn, creds, err := f.conn.options(f.address)
	if err != nil {
		return nil, nil, err
	}
	store, err := temporal.NewStore(f.store)
	if err != nil {
		return nil, nil, fmt.Errorf("--store: %w", err)
	}
	c, err := client.Dial(client.Options{HostPort: f.address, Namespace: f.namespace, ConnectionOptions: conn, Credentials: creds,
		DataConverter: store.DataConverter(f.threshold), Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("connect to Temporal at %s: %w", f.address, err)
	}
	return c, store, nil
}

func workerCmd(ctx context.Context, env *cli.Env, args []string) int {
	fs := env.FlagSet("worker", "[flags]",
		"Executes the runs of `specloop-temporal serve`: polls --task-queue for workflows and for the\n"+
			"activities any worker can run (opening a run, model calls), and this host's queue for the tool\n"+
			"calls, checks and patches of the runs whose workspace is under --workspace-root here. Workers with\n"+
			"the same --host-queue (by default: the same host name and workspace root) stand in for each other:\n"+
			"when one dies, another retries its tool call, which returns the recorded observation if the call\n"+
			"had completed. --store must be the directory the API servers use. Model keys come from the\n"+
			"environment, as for serve. SIGINT or SIGTERM stops the worker; its runs go on elsewhere.")
	var tf temporalFlags
	tf.registerShared(fs)
	root := fs.String("workspace-root", ".", "the directory that holds the runs' workspaces; runs may read and write all of it, so --store must lie outside it")
	hostQueue := fs.String("host-queue", "", "this host's task queue (default: --task-queue@HOSTNAME:ROOT-HASH)")
	allowCommands := fs.Bool("allow-commands", false, "offer run_command to runs and run their completion checks, setup commands and custom tools that run commands (serve's --tools-spec); without it a run with any of them ends before its first model call, with an error naming this flag, and nothing of it runs here")
	var sbFlags cli.SandboxFlags
	sbFlags.Register(fs)
	var mcpf cli.MCPFlags
	mcpf.Register(fs, "an external MCP server runs may name (mcp_servers: [NAME]), as serve's --mcp: give the workers the API servers' --mcp; repeatable")
	var cloneHosts []string
	fs.Func("clone-hosts", cli.CloneHostsUsage+"; give the workers the API servers' --clone-hosts", func(v string) (err error) {
		cloneHosts, err = cli.ParseCloneHosts(v)
		return err
	})
	cloneCache := fs.String("clone-cache", "", "with --clone-hosts: the directory of this worker's clones, outside --workspace-root (default: "+cli.StateDirUsage("clones")+")")
	if code, done := cli.ParseNoArgs(fs, args); done {
		return code
	}
	policy, err := sbFlags.Policy()
	if err != nil {
		return env.Fail(cli.ExitUsage, "worker: %v", err)
	}
	mcpServers, err := mcpf.Servers()
	if err != nil {
		return env.Fail(cli.ExitUsage, "worker: %v", err)
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		return env.Fail(cli.ExitUsage, "worker: --workspace-root: %v", err)
	}
	if *hostQueue == "" {
		host, err := os.Hostname()
		if err != nil {
			return env.Fail(cli.ExitInternal, "worker: %v", err)
		}
		sum := sha256.Sum256([]byte(abs))
		*hostQueue = tf.queue + "@" + host + ":" + hex.EncodeToString(sum[:6])
	}
	if tf.store, err = storeLocation(tf.store, abs); err != nil {
		return env.Fail(cli.ExitUsage, "worker: %v", err)
	}
	var clones *runner.Cloner
	if len(cloneHosts) > 0 {
		dir, err := cli.RecordsDir("--clone-cache", *cloneCache, "clones", abs)
		if err != nil {
			return env.Fail(cli.ExitUsage, "worker: %v", err)
		}
		clones = &runner.Cloner{Dir: dir, Hosts: cloneHosts}
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, store, err := tf.dial(logger)
	if err != nil {
		return env.Fail(cli.ExitInternal, "worker: %v", err)
	}
	defer c.Close()
	acts := &temporal.Activities{Store: store, WorkspaceRoot: abs, HostQueue: *hostQueue, SystemModels: runner.ModelsWithSystem,
		Setup: wiring.Config{DisableCommands: !*allowCommands, Sandbox: policy, MCPServers: mcpServers, MCP: mcpf.Config(env.Stderr),
			Secrets: tf.conn.secrets()}, Clones: clones}
	shared, host := temporal.NewWorkers(c, tf.queue, acts, worker.Options{})
	for _, w := range []worker.Worker{shared, host} {
		if err := w.Start(); err != nil {
			return env.Fail(cli.ExitInternal, "worker: %v", err)
		}
		defer w.Stop()
	}
	fmt.Fprintf(env.Stderr, "worker: polling %s and %s\n", tf.queue, *hostQueue)
	<-ctx.Done()
	return cli.ExitOK
}
