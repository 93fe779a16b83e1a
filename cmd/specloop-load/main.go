//go:build unix

// Command specloop-load measures a specloop server under load, on loopback:
// 3-step script runs created and awaited through the sdk by concurrent
// clients (throughput, create latency, and the server's memory once the
// runs are retained), then many runs in flight at once waiting on a slow
// model (the server's memory while they wait).
//
// The server runs in a child process (this binary, re-executed), built with
// server.New exactly like `specloop serve`, so its memory is measured alone;
// the only difference is the model of the in-flight phase, which waits
// before each answer.
//
//	go run ./cmd/specloop-load -runs 10000 -clients 64 -inflight 1000
//
// Figures go to stdout; the server's heap figures go to stderr. Every
// request goes to 127.0.0.1; the load is bounded by -runs and -inflight and
// stops by itself. For finding where time and memory go, LOAD_CPUPROFILE=F
// writes a CPU profile of each server process to F.PID and
// LOAD_HEAPPROFILE=F a heap profile of the retained runs.
//
// It is Unix-only: it reads rusage and signals the server with SIGUSR1/2.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/trace"
)

// threeSteps is each run's script: two calculator calls and a finish.
var threeSteps = []string{
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":84,"operation":"subtract","right":80}}`,
	`{"type":"finish","answer":"12 * 7 = 84, which is 4 more than 80."}`,
}

const token = "load-test-token"

func main() {
	child := flag.Bool("child", false, "internal: run the server")
	runs := flag.Int("runs", 10000, "runs created and awaited in the throughput phase (0 skips it)")
	clients := flag.Int("clients", 64, "concurrent clients in the throughput phase")
	inflight := flag.Int("inflight", 1000, "runs held in flight on a slow model in the memory phase (0 skips it)")
	dir := flag.String("dir", "", "where the data and workspace directories go (default: a temporary directory)")
	syncPolicy := flag.String("sync", "none", "the server's trace sync policy (none, end, every)")
	maxConcurrent := flag.Int("max-concurrent", runner.DefaultMaxConcurrent, "the server's --max-concurrent in the throughput phase")
	rate := flag.Float64("rate", 0, "pace the throughput phase at this many runs per second in all (0: as fast as the clients go)")
	temporalAddr := flag.String("temporal-address", "", "run the server on the Temporal engine with this frontend (HOST:PORT), with a worker in its process")
	temporalNS := flag.String("temporal-namespace", "default", "the Temporal namespace of -temporal-address")
	temporalWorkers := flag.Int("temporal-workers", 0, "with -temporal-address: run the workers in this many processes of their own, not in the server's")
	workerChild := flag.Bool("worker", false, "internal: run a Temporal worker")
	flag.Parse()
	if *temporalAddr != "" {
		os.Setenv("LOAD_TEMPORAL", *temporalAddr)
		os.Setenv("LOAD_TEMPORAL_NAMESPACE", *temporalNS)
		os.Setenv("LOAD_TEMPORAL_WORKERS", strconv.Itoa(*temporalWorkers))
		if os.Getenv("LOAD_QUEUE") == "" {
			os.Setenv("LOAD_QUEUE", fmt.Sprintf("load-%d", os.Getpid()))
		}
	}
	if *child {
		os.Exit(serveChild())
	}
	if *workerChild {
		os.Exit(serveWorker())
	}
	if err := run(*runs, *clients, *inflight, *dir, *syncPolicy, *maxConcurrent, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "specloop-load:", err)
		os.Exit(1)
	}
}

func run(runs, clients, inflight int, dir, syncPolicy string, maxConcurrent int, rate float64) error {
	base, err := os.MkdirTemp(dir, "specloop-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	fmt.Printf("specloop-load: %d runs by %d clients, %d in flight; data under %s\n", runs, clients, inflight, base)
	if runs > 0 {
		if err := throughput(base, runs, clients, syncPolicy, maxConcurrent, rate); err != nil {
			return err
		}
	}
	if inflight > 0 {
		if err := inFlight(base, inflight); err != nil {
			return err
		}
	}
	return nil
}

// throughput runs the load through a fresh server, then measures the
// server's memory with every run finished and retained.
func throughput(base string, runs, clients int, syncPolicy string, maxConcurrent int, rate float64) error {
	s, err := startChild(filepath.Join(base, "throughput"), clients, maxConcurrent, 0, syncPolicy)
	if err != nil {
		return err
	}
	defer s.stop()
	c, err := sdk.New(s.url, sdk.Config{Token: token})
	if err != nil {
		return err
	}
	var next, failed atomic.Int64
	var mu sync.Mutex
	var creates []time.Duration
	var wg sync.WaitGroup
	serverCPU0, clientCPU0, workerCPU0 := s.cpu(), selfCPU(), s.workerCPU()
	t0 := time.Now()
	// With a rate, run n may start at t0 + n/rate at the earliest.
	startAt := func(n int64) time.Time {
		if rate <= 0 {
			return time.Time{}
		}
		return t0.Add(time.Duration(float64(n-1) / rate * float64(time.Second)))
	}
	for i := range clients {
		ws := fmt.Sprintf("w%04d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			var mine []time.Duration
			for {
				n := next.Add(1)
				if n > int64(runs) {
					break
				}
				if d := time.Until(startAt(n)); d > 0 {
					time.Sleep(d)
				}
				req := gen.CreateRunRequest{Task: gen.Task{Prompt: "Is 12 x 7 more than 80?"}, Model: sdk.Script(threeSteps...), Workspace: &ws}
				c0 := time.Now()
				r, err := c.CreateRun(ctx, req)
				mine = append(mine, time.Since(c0))
				if err == nil {
					r, err = c.Wait(ctx, r.Id)
				}
				if err != nil || r.Result == nil || r.Result.ExitReason != gen.ExitReasonFinished || r.Result.StepsUsed != 3 {
					if failed.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "first failure: %v %+v\n", err, r.Result)
					}
				}
			}
			mu.Lock()
			creates = append(creates, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	serverCPU, clientCPU, workerCPU := s.cpu()-serverCPU0, selfCPU()-clientCPU0, s.workerCPU()-workerCPU0
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %d runs failed", n, runs)
	}
	slices.Sort(creates)
	pct := func(p int) time.Duration { return creates[min(len(creates)-1, len(creates)*p/100)] }
	pace := "as fast as the clients go"
	if rate > 0 {
		pace = fmt.Sprintf("paced at %.0f runs/s", rate)
	}
	fmt.Printf("throughput (%s, server max-concurrent %d): %d runs in %.2fs = %.0f runs/s; create latency p50 %s, p90 %s, p99 %s, max %s\n",
		pace, maxConcurrent, runs, elapsed.Seconds(), float64(runs)/elapsed.Seconds(), ms(pct(50)), ms(pct(90)), ms(pct(99)), ms(creates[len(creates)-1]))
	fmt.Printf("cpu: server %s per run, clients %s per run (%.0f%% of 2 cores busy with the load)\n",
		ms(serverCPU/time.Duration(runs)), ms(clientCPU/time.Duration(runs)), 100*(serverCPU+clientCPU+workerCPU).Seconds()/elapsed.Seconds()/2)
	if len(s.workers) > 0 {
		fmt.Printf("cpu: %d Temporal worker processes %s per run in all\n", len(s.workers), ms(workerCPU/time.Duration(runs)))
	}
	steps, err := stepLatencies(filepath.Join(base, "throughput", "data", "traces"))
	if err != nil {
		return err
	}
	if len(steps) > 0 {
		fmt.Printf("step latency (a run's duration per step, from its trace): p50 %s, p99 %s\n",
			ms(steps[len(steps)/2]), ms(steps[min(len(steps)-1, len(steps)*99/100)]))
	}
	n := 0
	for _, err := range c.ListRuns(context.Background(), sdk.ListOptions{Status: gen.RunStatusFinished, PageSize: 1000}) {
		if err != nil {
			return err
		}
		n++
	}
	if os.Getenv("LOAD_HEAPPROFILE") != "" {
		_ = s.cmd.Process.Signal(syscall.SIGUSR2)
		time.Sleep(time.Second)
	}
	rss, hwm := s.memory()
	fmt.Printf("retained: %d finished runs listed; server RSS %.1f MiB (peak %.1f MiB)\n", n, rss, hwm)
	time.Sleep(10 * time.Second)
	rss, _ = s.memory()
	fmt.Printf("retained, 10 s later: server RSS %.1f MiB\n", rss)

	// A restart rebuilds every run from the data directory.
	s.stop()
	t1 := time.Now()
	s2, err := startChild(filepath.Join(base, "throughput"), 0, maxConcurrent, 0, syncPolicy)
	if err != nil {
		return err
	}
	defer s2.stop()
	ready := time.Since(t1)
	c2, err := sdk.New(s2.url, sdk.Config{Token: token})
	if err != nil {
		return err
	}
	n = 0
	for _, err := range c2.ListRuns(context.Background(), sdk.ListOptions{Status: gen.RunStatusFinished, PageSize: 1000}) {
		if err != nil {
			return err
		}
		n++
	}
	rss, _ = s2.memory()
	fmt.Printf("restart: serving again after %s with %d finished runs; server RSS %.1f MiB\n", ms(ready), n, rss)
	return nil
}

// inFlight holds n runs in flight, each in its own workspace, on a model
// that waits a minute, and measures the server's memory while they wait.
func inFlight(base string, n int) error {
	s, err := startChild(filepath.Join(base, "inflight"), n, n, time.Minute, "none")
	if err != nil {
		return err
	}
	defer s.stop()
	c, err := sdk.New(s.url, sdk.Config{Token: token})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	idle, _ := s.memory()
	for i := range n {
		ws := fmt.Sprintf("w%04d", i)
		if _, err := c.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "wait"}, Model: sdk.Script(threeSteps...), Workspace: &ws}); err != nil {
			return err
		}
	}
	for {
		running := 0
		for _, err := range c.ListRuns(ctx, sdk.ListOptions{Status: gen.RunStatusRunning, PageSize: 1000}) {
			if err != nil {
				return err
			}
			running++
		}
		if running == n {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("only %d of %d runs running", running, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rss, hwm := s.memory()
	fmt.Printf("in flight: %d runs running, waiting on the model; server RSS %.1f MiB (peak %.1f MiB, idle %.1f MiB)\n", n, rss, hwm, idle)
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// child is a server process.
type child struct {
	cmd     *exec.Cmd
	workers []*exec.Cmd // the Temporal workers, with -temporal-workers
	url     string
	once    sync.Once
}

// startChild starts a server on a fresh data directory with workspaces
// w0000... under its root; slow > 0 makes every model call wait that long.
func startChild(dir string, workspaces, maxConcurrent int, slow time.Duration, syncPolicy string) (*child, error) {
	data, root := filepath.Join(dir, "data"), filepath.Join(dir, "root")
	for i := range workspaces {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("w%04d", i)), 0o700); err != nil {
			return nil, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-child")
	cmd.Env = append(os.Environ(), "LOAD_DATA="+data, "LOAD_ROOT="+root, "LOAD_MAX="+strconv.Itoa(maxConcurrent), "LOAD_SLOW="+slow.String(), "LOAD_SYNC="+syncPolicy)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return nil, fmt.Errorf("server: %w", err)
	}
	c := &child{cmd: cmd, url: strings.TrimSpace(line)}
	if n, _ := strconv.Atoi(os.Getenv("LOAD_TEMPORAL_WORKERS")); n > 0 && os.Getenv("LOAD_TEMPORAL") != "" {
		c.workers, err = startWorkers(dir, n)
		if err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// cpu returns the CPU time the server has used.
func (c *child) cpu() time.Duration { return cpuOf(c.cmd.Process.Pid) }

// workerCPU returns the CPU time the worker processes have used.
func (c *child) workerCPU() time.Duration {
	var d time.Duration
	for _, w := range c.workers {
		d += cpuOf(w.Process.Pid)
	}
	return d
}

// cpuOf returns the CPU time process pid has used.
func cpuOf(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks
}

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// memory returns the server's resident set size and its peak, in MiB, and
// has the server print its heap figures.
func (c *child) memory() (rss, peak float64) {
	_ = c.cmd.Process.Signal(syscall.SIGUSR1)
	time.Sleep(100 * time.Millisecond)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak
}

// stop ends the server gracefully (SIGTERM), or kills it after 30 s.
func (c *child) stop() {
	c.once.Do(func() {
		for _, w := range c.workers {
			_ = w.Process.Signal(syscall.SIGTERM)
			defer w.Wait()
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
	})
}

// serveChild is the server process: server.New as `specloop serve` builds
// it, on 127.0.0.1, until SIGTERM.
func serveChild() int {
	max, _ := strconv.Atoi(os.Getenv("LOAD_MAX"))
	slow, _ := time.ParseDuration(os.Getenv("LOAD_SLOW"))
	policy, err := trace.ParseSyncPolicy(os.Getenv("LOAD_SYNC"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := server.Config{Token: token, Config: runner.Config{DataDir: os.Getenv("LOAD_DATA"), WorkspaceRoot: os.Getenv("LOAD_ROOT"), MaxConcurrent: max, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}}
	cfg.TraceSync = policy
	stopEngine, err := temporalEngine(&cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopEngine()
	if slow > 0 {
		cfg.Models = func(mc gen.ModelConfig) (agent.Model, error) {
			m, err := runner.DefaultModels(mc)
			return slowModel{m, slow}, err
		}
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if p := os.Getenv("LOAD_CPUPROFILE"); p != "" {
		// A CPU profile of the server, for finding where a run's time goes.
		if f, err := os.Create(fmt.Sprintf("%s.%d", p, os.Getpid())); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The http.Server and listener `specloop serve` uses: its timeouts,
	// connection cap and stream caps are part of what is measured.
	hs := srv.HTTPServer()
	go hs.Serve(srv.Listener(ln))
	fmt.Printf("http://%s\n", ln.Addr())
	// SIGUSR1 prints the Go heap's figures, to tell live data from memory
	// the runtime has not given back yet.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	if p := os.Getenv("LOAD_HEAPPROFILE"); p != "" {
		usr2 := make(chan os.Signal, 1)
		signal.Notify(usr2, syscall.SIGUSR2)
		go func() {
			for range usr2 {
				runtime.GC()
				f, err := os.Create(p)
				if err == nil {
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}()
	}
	go func() {
		for range usr1 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
			fmt.Fprintf(os.Stderr, "  server heap: live %.1f MiB, in use %.1f MiB, idle %.1f MiB (released %.1f MiB), stacks %.1f MiB, sys %.1f MiB, goroutines %d\n",
				mib(m.HeapAlloc), mib(m.HeapInuse), mib(m.HeapIdle), mib(m.HeapReleased), mib(m.StackInuse), mib(m.Sys), runtime.NumGoroutine())
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = errors.Join(srv.Shutdown(sctx), hs.Shutdown(sctx))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// slowModel waits before each answer, like a slow provider.
type slowModel struct {
	inner agent.Model
	delay time.Duration
}

func (m slowModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	select {
	case <-time.After(m.delay):
	case <-ctx.Done():
		return agent.Turn{}, ctx.Err()
	}
	return m.inner.Next(ctx, req)
}
