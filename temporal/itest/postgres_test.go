package itest

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/specloop/specloop/temporal/itest/pgtemporal"
)

// The PostgreSQL suite: one Temporal server on a throwaway PostgreSQL
// cluster (persistence and visibility), shared by the tests, each on a
// task queue of its own, with two workers and two API servers (each with
// its own --data). It runs when PostgreSQL's binaries are present, is left
// out by -short, and fails instead of skipping when CI is true.

var pg struct {
	once    sync.Once
	err     error
	address string
	stop    func()
}

const pgNamespace = "itest"

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.stop != nil {
		pg.stop()
	}
	os.Exit(code)
}

// newPostgresCluster starts two workers and two API servers on the shared
// PostgreSQL-backed Temporal server, starting it first if need be.
func newPostgresCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("the PostgreSQL suite is left out by -short")
	}
	if _, err := pgtemporal.BinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip(err)
	}
	pg.once.Do(func() {
		t0 := time.Now()
		p, err := pgtemporal.StartPostgres(pgtemporal.Ephemeral)
		if err != nil {
			pg.err = err
			return
		}
		tools, err := os.MkdirTemp("", "itest-tools-")
		if err == nil {
			err = p.SetupSchema(tools)
			os.RemoveAll(tools)
		}
		var srv *pgtemporal.Server
		if err == nil {
			srv, err = pgtemporal.StartServer(p, pgNamespace, pgtemporal.OnePartition(), os.Getenv("ITEST_TEMPORAL_LOG"))
		}
		if err != nil {
			p.Stop()
			pg.err = err
			return
		}
		pg.address = srv.HostPort
		pg.stop = func() { srv.Stop(); p.Stop() }
		t.Logf("Temporal on PostgreSQL (port %d) up in %s", p.Port, time.Since(t0).Round(time.Millisecond))
	})
	if pg.err != nil {
		t.Fatalf("Temporal on PostgreSQL: %v", pg.err)
	}
	return newClusterOn(t, pg.address, pgNamespace, "itest-"+strings.ToLower(t.Name()), 2)
}

// A worker killed with SIGKILL in the middle of a tool call: the other
// worker finishes the run as an undisturbed run ends.
func TestPostgresWorkerKilledMidCall(t *testing.T) {
	c := newPostgresCluster(t)
	c.workerKilledMidCall(t)
}

// An API server killed with SIGKILL while a run it accepted waits for
// approval: the other API server lists the waiting call and decides it.
func TestPostgresAPIServerKilledWhileWaiting(t *testing.T) {
	c := newPostgresCluster(t)
	id := c.createApprovalRun("approved")
	a := c.apis[0]
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	b := c.on(1)
	b.knows(id)
	b.waitApproval(id)
	b.decide(id, "approved")
}

// A run accepted by one API server is listed by the other, which decides
// its approval; both then report it finished.
func TestPostgresRunListedAndDecidedFromTheOtherAPIServer(t *testing.T) {
	c := newPostgresCluster(t)
	id := c.createApprovalRun("listed")
	b := c.on(1)
	deadline := time.Now().Add(30 * time.Second)
	for !b.lists(id, "waiting_for_approval") {
		if time.Now().After(deadline) {
			t.Fatalf("API server 2 does not list run %s, accepted by API server 1 and waiting for approval: "+
				"each API server keeps its own run list (its --data), not one index for every API server", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.knows(id)
	b.waitApproval(id)
	b.decide(id, "listed")
	if got := c.waitRun(id); got.Result["exit_reason"] != "finished" {
		t.Fatalf("API server 1 reports the run decided on API server 2 %v", got.Result["exit_reason"])
	}
}

// knows fails the test unless the API server serves run id, one it may
// not have accepted itself.
func (c *cluster) knows(id string) {
	c.t.Helper()
	resp, err := http.Get(c.url + "/v1/runs/" + id)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		c.t.Fatalf("API server %s answers 404 for run %s, accepted by another API server: each API server keeps its own run list "+
			"(its --data), so no other API server can follow or decide a run", c.url, id)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET /v1/runs/%s: %d", id, resp.StatusCode)
	}
}

// lists reports whether GET /v1/runs?status=status lists run id.
func (c *cluster) lists(id, status string) bool {
	c.t.Helper()
	resp, err := http.Get(c.url + "/v1/runs?status=" + status)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Runs []runView `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET /v1/runs: %d %v", resp.StatusCode, err)
	}
	for _, r := range page.Runs {
		if r.ID == id {
			return true
		}
	}
	return false
}
