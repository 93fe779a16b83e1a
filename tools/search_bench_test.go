package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/tools/internal/linematch"
)

// benchQueries are the searches compared with ripgrep over the Go source
// tree: literals and regular expressions of the kinds an agent sends.
var benchQueries = []struct {
	name    string
	pattern string
	regex   bool
	fold    bool
}{
	{"literal/ErrNotExist", "ErrNotExist", false, false},
	{"literal/func_main", "func main()", false, false},
	{"literal/ignore_case", "errnotexist", false, true},
	{"regex/func_decl", `func \w+\(`, true, false},
	{"regex/error_type", `[A-Z]\w+Error\b`, true, false},
	{"regex/todo_fixme", `(?i)todo|fixme`, true, false},
	{"regex/date", `\d{4}-\d{2}-\d{2}`, true, false},
	{"regex/classes_only", `\b[A-Z]{6,}\b`, true, false},
}

// gorootSrc is the Go distribution's own source tree (~11,000 files).
func gorootSrc(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skip("go env GOROOT:", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(dir); err != nil {
		tb.Skip("no GOROOT/src:", err)
	}
	return dir
}

// searchAll runs the search tool's engine over dir with no limit and returns
// the number of matching lines.
func searchAll(tb testing.TB, ws *Workspace, pattern string, regex, fold bool) int {
	m, err := linematch.Compile(pattern, regex, fold)
	if err != nil {
		tb.Fatal(err)
	}
	s := &searcher{ws: ws, m: m, limit: 1 << 30}
	ms, err := s.run(context.Background(), ".")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ms)
}

// ripgrep runs rg like the search tool searches: line numbers, hidden files
// searched, .gitignore files respected outside git repositories too, binary
// files skipped. Its output is read (not sent to /dev/null, which rg
// notices and stops early for). It returns the number of output lines.
func ripgrep(tb testing.TB, rg, dir, pattern string, regex, fold bool) int {
	args := []string{"--line-number", "--no-heading", "--hidden", "--no-require-git", "--no-config", "--color=never"}
	if !regex {
		args = append(args, "--fixed-strings")
	}
	if fold {
		args = append(args, "--ignore-case")
	}
	args = append(args, "--regexp", pattern, ".")
	cmd := exec.Command(rg, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			tb.Fatalf("rg: %v", err)
		}
	}
	return bytes.Count(out.Bytes(), []byte{'\n'})
}

func BenchmarkSearchGoroot(b *testing.B) {
	src := gorootSrc(b)
	ws, err := OpenWorkspace(src)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n = searchAll(b, ws, q.pattern, q.regex, q.fold)
			}
			b.ReportMetric(float64(n), "lines")
		})
	}
}

func BenchmarkRipgrepGoroot(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("ripgrep (rg) is not installed")
	}
	src := gorootSrc(b)
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n = ripgrep(b, rg, src, q.pattern, q.regex, q.fold)
			}
			b.ReportMetric(float64(n), "lines")
		})
	}
}

// perfEnv turns the timed checks on: with it unset they skip, saying so.
// .ci/run sets it in a step of its own and shows their figures.
const perfEnv = "SPECLOOP_PERF"

// ripgrepBudget is how much slower than ripgrep a search over a large
// repository may be.
const ripgrepBudget = 1.5

// TestSearchVersusRipgrep prints the median time of several runs of each
// query for the search tool and for ripgrep, over $(go env GOROOT)/src. It
// measures, it does not judge: timing never decides a test, and a ratio
// over ripgrepBudget is marked, not failed (the README's runs on the
// shared machine put the same literal query anywhere in 0.5–1.5×). It runs
// only with SPECLOOP_PERF=1 (or SPECLOOP_BENCH_SEARCH=N, as before), N
// runs per query (SPECLOOP_BENCH_SEARCH, 7 when unset or not a number).
// Under CI=true a missing ripgrep fails it: CI compares, it does not skip.
//
//	SPECLOOP_PERF=1 SPECLOOP_BENCH_SEARCH=9 go test ./tools -run TestSearchVersusRipgrep -v
func TestSearchVersusRipgrep(t *testing.T) {
	t.Parallel()
	env := os.Getenv("SPECLOOP_BENCH_SEARCH")
	if os.Getenv(perfEnv) != "1" && env == "" {
		t.Skip(perfEnv + " is not 1: this test times the search against ripgrep, shown by .ci/run's timed step; run it with " +
			perfEnv + "=1 go test ./tools -run TestSearchVersusRipgrep -v")
	}
	runs, err := strconv.Atoi(env)
	if err != nil || runs < 1 {
		runs = 7
	}
	src := gorootSrc(t)
	ws, err := OpenWorkspace(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rg, _ := exec.LookPath("rg")
	if rg == "" && os.Getenv("CI") == "true" {
		t.Fatal("no rg on PATH: CI must install ripgrep (.ci/run: apt-get install -y ripgrep)")
	}
	// Each run times the search tool and then ripgrep, so both see the
	// same machine load; the medians are compared.
	medians := func(fs ...func() int) ([]time.Duration, []int) {
		times := make([][]time.Duration, len(fs))
		counts := make([]int, len(fs))
		for i, f := range fs {
			counts[i] = f() // warm the page cache
		}
		for range runs {
			for i, f := range fs {
				t0 := time.Now()
				counts[i] = f()
				times[i] = append(times[i], time.Since(t0))
			}
		}
		out := make([]time.Duration, len(fs))
		for i := range times {
			slices.Sort(times[i])
			out[i] = times[i][len(times[i])/2]
		}
		return out, counts
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GOROOT/src, %d runs per query, median, GOMAXPROCS=%d\n", runs, runtime.GOMAXPROCS(0))
	fmt.Fprintf(&b, "| query | pattern | search | lines | ripgrep | lines | ratio |\n|---|---|---|---|---|---|---|\n")
	for _, q := range benchQueries {
		ours := func() int { return searchAll(t, ws, q.pattern, q.regex, q.fold) }
		if rg == "" {
			d, n := medians(ours)
			fmt.Fprintf(&b, "| %s | `%s` | %.0f ms | %d | (rg not installed) | | |\n", q.name, q.pattern, ms(d[0]), n[0])
			continue
		}
		d, n := medians(ours, func() int { return ripgrep(t, rg, src, q.pattern, q.regex, q.fold) })
		ratio := float64(d[0]) / float64(d[1])
		mark := ""
		if ratio > ripgrepBudget {
			mark = fmt.Sprintf(" over %.1f×", ripgrepBudget)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %.0f ms | %d | %.0f ms | %d | %.2f×%s |\n", q.name, q.pattern, ms(d[0]), n[0], ms(d[1]), n[1], ratio, mark)
	}
	t.Log("\n" + b.String())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
