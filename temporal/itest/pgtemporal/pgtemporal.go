// Package pgtemporal runs a Temporal server on PostgreSQL, as production
// Temporal runs: a throwaway PostgreSQL cluster (Debian's `postgresql`
// binaries, initdb and pg_ctl, in a directory of its own), the schema of
// persistence and visibility set up by Temporal's own SQL tool (built from
// go.temporal.io/server/cmd/tools/sql at the version go.mod pins), and the
// server's four services in this process. The tests of temporal/itest and
// `go run ./devserver -postgres` use it; it must run inside the module
// (cwd in temporal/itest), which builds the SQL tool.
package pgtemporal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // the postgres12 plugin
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The databases of persistence and visibility, and the role that owns them.
const (
	dbUser     = "temporal"
	dbMain     = "temporal"
	dbVis      = "temporal_visibility"
	pluginName = "postgres12"
)

// BinDir returns the directory of PostgreSQL's server binaries (initdb,
// pg_ctl, postgres): the one on PATH, or else the newest of Debian's
// /usr/lib/postgresql/VERSION/bin.
func BinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "pg_ctl"))
		return err != nil
	})
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL server binaries: neither pg_ctl and initdb on PATH nor /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)")
	}
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	return dirs[len(dirs)-1], nil
}

// Postgres is a running throwaway PostgreSQL cluster on 127.0.0.1.
type Postgres struct {
	Port int
	dir  string // owned by the cluster's user: data/, the log and the socket
	bin  string
	cred *syscall.Credential // the cluster's user when this process is root
}

// Durability says whether the cluster writes its commits to disk before it
// acknowledges them (PostgreSQL's defaults, as production has) or not
// (fsync, synchronous_commit and full_page_writes off: a test cluster that
// dies with its test).
type Durability bool

const (
	Durable   Durability = true
	Ephemeral Durability = false
)

// StartPostgres creates a cluster in a new directory under os.TempDir()
// and starts it, listening on 127.0.0.1 only, with trust authentication
// for role temporal. As root it runs the cluster as user postgres
// (PostgreSQL refuses to run as root).
func StartPostgres(d Durability) (*Postgres, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "specloop-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, PostgreSQL needs a user to run as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := p.pg("initdb", "-D", p.data(), "-U", dbUser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts := []string{"-c listen_addresses=127.0.0.1", "-k " + dir, "-c max_connections=200"}
	if d == Ephemeral {
		opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	// A port picked now may be taken before the cluster binds it: try a few.
	for range 5 {
		p.Port, err = freePort()
		if err != nil {
			break
		}
		err = p.pg("pg_ctl", "-D", p.data(), "-l", filepath.Join(dir, "postgres.log"), "-w", "-t", "60",
			"-o", strings.Join(append(opts, "-p "+strconv.Itoa(p.Port)), " "), "start")
		if err == nil {
			return p, nil
		}
	}
	logText, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
	os.RemoveAll(dir)
	return nil, fmt.Errorf("%w\n%s", err, logText)
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// pg runs one of the cluster's binaries as the cluster's user.
func (p *Postgres) pg(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// Stop stops the cluster (immediate: nothing of it is kept) and removes
// its directory.
func (p *Postgres) Stop() error {
	err := p.pg("pg_ctl", "-D", p.data(), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(p.dir))
}

// SetupSchema creates the databases of persistence and visibility and
// brings their schema to the version of the pinned server, with
// temporal-sql-tool (built into dir), as a deployment does:
//
//	temporal-sql-tool --plugin postgres12 --ep HOST -p PORT -u temporal --db DB create-database
//	temporal-sql-tool ... --db DB setup-schema -v 0.0
//	temporal-sql-tool ... --db DB update-schema --schema-name postgresql/v12/temporal   (or .../visibility)
func (p *Postgres) SetupSchema(dir string) error {
	tool := filepath.Join(dir, "temporal-sql-tool")
	build := exec.Command("go", "build", "-o", tool, "go.temporal.io/server/cmd/tools/sql")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build temporal-sql-tool (go.temporal.io/server/cmd/tools/sql; run inside temporal/itest): %w\n%s", err, out)
	}
	for db, schema := range map[string]string{dbMain: "postgresql/v12/temporal", dbVis: "postgresql/v12/visibility"} {
		conn := []string{"--plugin", pluginName, "--ep", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-u", dbUser, "--db", db}
		for _, step := range [][]string{{"create-database"}, {"setup-schema", "-v", "0.0"}, {"update-schema", "--schema-name", schema}} {
			cmd := exec.Command(tool, append(slices.Clone(conn), step...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("temporal-sql-tool %s on %s: %w\n%s", step[0], db, err, out)
			}
		}
	}
	return nil
}

// OnePartition is the dynamic configuration of the Temporal CLI's dev
// server that matters here: one partition per task queue, so that a task
// never waits to be forwarded between partitions; and search attributes
// read afresh, as temporaltest has them.
func OnePartition() dynamicconfig.StaticClient {
	one := []dynamicconfig.ConstrainedValue{{Value: 1}}
	return dynamicconfig.StaticClient{
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():      one,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():     one,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
	}
}

// Server is a Temporal server on the cluster.
type Server struct {
	srv      temporal.Server
	HostPort string // the frontend
}

// StartServer starts a Temporal server (frontend, history, matching and
// worker services in this process, on loopback ports) with persistence
// and visibility on p, and registers namespace ns. dc adds dynamic
// configuration. The server logs its warnings and errors to logFile ("":
// nowhere).
func StartServer(p *Postgres, ns string, dc dynamicconfig.StaticClient, logFile string) (*Server, error) {
	var logger log.Logger = log.NewNoopLogger()
	if logFile != "" {
		logger = log.NewZapLogger(log.BuildZapLogger(log.Config{Level: "warn", OutputFile: logFile}))
	}
	ports := make([]int, 9)
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	sqlStore := func(db string, conns int) config.DataStore {
		return config.DataStore{SQL: &config.SQL{PluginName: pluginName, DatabaseName: db, ConnectAddr: "127.0.0.1:" + strconv.Itoa(p.Port),
			ConnectProtocol: "tcp", User: dbUser, MaxConns: conns, MaxIdleConns: conns, MaxConnLifetime: time.Hour}}
	}
	service := func(i int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: ports[2*i], MembershipPort: ports[2*i+1], BindOnLocalHost: true}}
	}
	hostPort := "127.0.0.1:" + strconv.Itoa(ports[0])
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"},
			PProf:      config.PProf{Port: ports[8]},
		},
		Persistence: config.Persistence{DefaultStore: "postgres", VisibilityStore: "postgres-visibility", NumHistoryShards: 4,
			DataStores: map[string]config.DataStore{"postgres": sqlStore(dbMain, 20), "postgres-visibility": sqlStore(dbVis, 10)}},
		ClusterMetadata: &cluster.Config{FailoverVersionIncrement: 10, MasterClusterName: "active", CurrentClusterName: "active",
			ClusterInformation: map[string]cluster.ClusterInformation{"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: hostPort}}},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            map[string]config.Service{"frontend": service(0), "history": service(1), "matching": service(2), "worker": service(3)},
		Archival:            config.Archival{History: config.HistoryArchival{State: "disabled"}, Visibility: config.VisibilityArchival{State: "disabled"}},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History: config.HistoryArchivalNamespaceDefaults{State: "disabled"}, Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"}}},
		PublicClient: config.PublicClient{HostPort: hostPort},
	}
	srv, err := temporal.NewServer(temporal.WithConfig(cfg), temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger), temporal.WithDynamicConfigClient(dc))
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	s := &Server{srv: srv, HostPort: hostPort}
	if err := s.register(ns); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// register creates namespace ns (a day's retention) and waits until the
// frontend serves it.
func (s *Server) register(ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: s.HostPort})
	if err != nil {
		return err
	}
	defer nc.Close()
	for {
		err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("register namespace %s: %w", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: ns})
	if err != nil {
		return err
	}
	defer c.Close()
	// A namespace is served once the frontend's namespace cache has it.
	for {
		_, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, PageSize: 1})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("namespace %s is not served: %w", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops the server.
func (s *Server) Stop() error { return s.srv.Stop() }

// freePort returns a port of 127.0.0.1 that is free now, below 32768:
// Temporal keeps the membership ports in a PostgreSQL smallint.
func freePort() (int, error) {
	for range 100 {
		port := 10000 + rand.IntN(22000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port of 127.0.0.1 between 10000 and 32000")
}
