package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// threeSteps is the load's run: two calculator calls and a finish.
var threeSteps = []string{
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":84,"operation":"subtract","right":80}}`,
	`{"type":"finish","answer":"12 * 7 = 84, which is 4 more than 80."}`,
}

// BenchmarkRuns creates 3-step script runs and waits for each through the
// sdk, from 64 concurrent clients on loopback, each client in its own
// workspace. It reports completed runs per second and the p50/p99 latency
// of the create call (the 202, which includes the fsync of the run log).
//
//	go test ./server -run '^$' -bench BenchmarkRuns -benchtime 20000x
func BenchmarkRuns(b *testing.B) {
	const clients = 64
	root := b.TempDir()
	for i := range clients {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("w%02d", i)), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := server.New(server.Config{Token: testToken, Config: runner.Config{DataDir: b.TempDir(), WorkspaceRoot: root}})
	if err != nil {
		b.Fatal(err)
	}
	hs := serveHTTP(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	c, err := sdk.New(hs.URL, sdk.Config{Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var mu sync.Mutex
	var creates []time.Duration
	var failed atomic.Int64
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		ws := fmt.Sprintf("w%02d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				req := gen.CreateRunRequest{Task: gen.Task{Prompt: "Is 12 x 7 more than 80?"}, Model: sdk.Script(threeSteps...), Workspace: &ws}
				c0 := time.Now()
				run, err := c.CreateRun(ctx, req)
				mine = append(mine, time.Since(c0))
				if err == nil {
					run, err = c.Wait(ctx, run.Id)
				}
				if err != nil || run.Result == nil || run.Result.ExitReason != gen.ExitReasonFinished || run.Result.StepsUsed != 3 {
					failed.Add(1)
				}
			}
			mu.Lock()
			creates = append(creates, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d runs failed", n)
	}
	slices.Sort(creates)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(creates[len(creates)/2].Microseconds())/1000, "create-p50-ms")
	b.ReportMetric(float64(creates[len(creates)*99/100].Microseconds())/1000, "create-p99-ms")
}
