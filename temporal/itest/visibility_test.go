package itest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// visibilityBudget is the figure: an event is on every API
// server's stream within this long of being recorded in the store (p99).
const visibilityBudget = 250 * time.Millisecond

// visibilitySteps is the number of tool calls of the measured run.
const visibilitySteps = 40

// Every event of a run reaches the event streams of both API servers, the
// one that accepted the run and the other, in order and once each; and
// how long after its batch was recorded in the store (the batch object's
// modification time) each event arrived on each stream is measured and
// printed (p50, p99, max), marked when its p99 is over the budget. The
// figure decides nothing: a loaded machine is slower, never wrong.
func TestPostgresEventVisibility(t *testing.T) {
	c := newPostgresCluster(t)
	var responses []string
	for i := range visibilitySteps {
		responses = append(responses, toolCall(fmt.Sprintf("v%d", i), fmt.Sprintf("echo %d", i)))
	}
	responses = append(responses, `{"type":"finish","answer":"done"}`)
	id := c.createScriptRun("visibility", responses)

	type arrival struct {
		opened time.Time
		at     map[int]time.Time // event id: when it was read
		types  []string
		err    error
	}
	arrivals := make([]arrival, len(c.apis))
	var wg sync.WaitGroup
	for i := range c.apis {
		wg.Go(func() {
			a := &arrivals[i]
			a.at = map[int]time.Time{}
			// The other API server finds the run once its workflow has
			// started, which the accepting one does after answering.
			var resp *http.Response
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				r, err := http.Get(c.apis[i].url + "/v1/runs/" + id + "/events")
				if err != nil {
					a.err = err
					return
				}
				if r.StatusCode == http.StatusOK {
					resp = r
					break
				}
				r.Body.Close()
				if r.StatusCode != http.StatusNotFound || time.Now().After(deadline) {
					a.err = fmt.Errorf("status %d", r.StatusCode)
					return
				}
			}
			defer resp.Body.Close()
			a.opened = time.Now()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			cur := 0
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "id: "):
					cur, _ = strconv.Atoi(line[4:])
					if _, twice := a.at[cur]; twice {
						a.err = fmt.Errorf("event %d twice", cur)
						return
					}
					a.at[cur] = time.Now()
				case strings.HasPrefix(line, "event: "):
					a.types = append(a.types, line[7:])
				}
			}
			a.err = sc.Err()
		})
	}
	if got := c.waitRun(id); got.Result["exit_reason"] != "finished" {
		t.Fatalf("the run ended %v", got.Result)
	}
	wg.Wait()

	recorded := c.recordedAt(id)
	for i, a := range arrivals {
		if a.err != nil {
			t.Fatalf("API server %d's stream: %v", i+1, a.err)
		}
		if len(a.at) != len(recorded) || a.types[len(a.types)-1] != "run_finished" {
			t.Fatalf("API server %d's stream has %d events ending %v, the store %d", i+1, len(a.at), a.types[len(a.types)-1:], len(recorded))
		}
		var lat []time.Duration
		for n, at := range a.at {
			rec := recorded[n-1]
			if rec.Before(a.opened) {
				continue // in the store before the stream opened: sent at once
			}
			lat = append(lat, at.Sub(rec))
		}
		if len(lat) < visibilitySteps {
			t.Fatalf("API server %d: only %d events were recorded after its stream opened", i+1, len(lat))
		}
		slices.Sort(lat)
		p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
		mark := ""
		if p(0.99) > visibilityBudget {
			mark = " OVER BUDGET"
		}
		role := "the accepting one"
		if i > 0 {
			role = "the other one"
		}
		fmt.Printf("event visibility on API server %d (%s): %d events, p50 %s, p99 %s, max %s (budget p99 %s)%s\n",
			i+1, role, len(lat), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), visibilityBudget, mark)
	}
}

// createScriptRun starts a run of the script responses in workspace ws.
func (c *cluster) createScriptRun(ws string, responses []string) string {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Join(c.dir, "ws", ws), 0o700); err != nil {
		c.t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"task": map[string]any{"prompt": "run commands"}, "workspace": ws, "max_steps": len(responses) + 5,
		"model": map[string]any{"provider": "script", "responses": responses}})
	resp, err := http.Post(c.url+"/v1/runs", "application/json", strings.NewReader(string(body)))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v runView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("create a run: %d %v", resp.StatusCode, err)
	}
	return v.ID
}

// recordedAt returns, for each line of run id's trace, when the store
// recorded it: the modification time of the batch object that holds it
// (runs/ID/events/FROM-TO-SHA256.jsonl of the directory store).
func (c *cluster) recordedAt(id string) []time.Time {
	c.t.Helper()
	names, err := filepath.Glob(filepath.Join(c.dir, "store", "runs", id, "events", "*.jsonl"))
	if err != nil || len(names) == 0 {
		c.t.Fatalf("the store holds no batch of run %s (%v)", id, err)
	}
	var out []time.Time
	for _, name := range names {
		var from, to int
		if _, err := fmt.Sscanf(filepath.Base(name), "%d-%d-", &from, &to); err != nil {
			c.t.Fatalf("batch %s: %v", name, err)
		}
		fi, err := os.Stat(name)
		if err != nil {
			c.t.Fatal(err)
		}
		for len(out) < to {
			out = append(out, time.Time{})
		}
		for n := from; n < to; n++ {
			if out[n].IsZero() || fi.ModTime().Before(out[n]) {
				out[n] = fi.ModTime()
			}
		}
	}
	for n, at := range out {
		if at.IsZero() {
			c.t.Fatalf("line %d of run %s is in no batch", n+1, id)
		}
	}
	return out
}
