package eval

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReadTasksNamesEveryBadLine: a file with bad lines is refused whole,
// each bad line named by its number and field, never its value.
func TestReadTasksNamesEveryBadLine(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "repo"), 0o700)
	path := filepath.Join(dir, "tasks.jsonl")
	writeFile(t, path, `{"id":"a","repo":"repo","prompt":"p","test":"go test ./..."}

{"id":"b","repo":"repo","prompt":"p","test":"t","max_steps":0}
{"id":"a","repo":"repo","prompt":"p","test":"t"}
{"id":"c","repo":"missing","prompt":"p","test":"t"}
{"id":"d","repo":"repo","prompt":"p","test":"t","secret":"sk-12345"}
not json
{"id":"e","repo":"ext::sh -c touch% /tmp/pwned://x","prompt":"p","test":"t"}
`)
	_, err := ReadTasks(path)
	if err == nil {
		t.Fatal("a file with bad lines was accepted")
	}
	for _, want := range []string{"tasks.jsonl:3: field \"/max_steps\"", "tasks.jsonl:4: id: \"a\" is the id of line 1", "tasks.jsonl:5: repo:", "tasks.jsonl:6:", "tasks.jsonl:7:", "tasks.jsonl:8: repo: only https"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "sk-12345") || strings.Contains(err.Error(), "tasks.jsonl:1:") {
		t.Errorf("error echoes a value or blames a good line:\n%v", err)
	}

	writeFile(t, path, `{"id":"a","repo":"repo","prompt":"p","test":"t","max_steps":7}`) // no newline at the end: a hand-written file
	tasks, err := ReadTasks(path)
	if err != nil || len(tasks) != 1 || tasks[0].Repo != filepath.Join(dir, "repo") || *tasks[0].MaxSteps != 7 {
		t.Fatalf("ReadTasks = %+v, %v; want one task with its repo made absolute", tasks, err)
	}
}

// TestReadResultsRepairsATornLine: what a crash mid-write leaves is cut off
// before the next line is appended; a bad complete line stops the run.
func TestReadResultsRepairsATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ResultsFile)
	good := `{"task_id":"a","attempt":1,"resolved":true,"steps":3,"input_tokens":10,"output_tokens":2,"duration_seconds":1.5}` + "\n"
	writeFile(t, path, good+`{"task_id":"a","att`)
	rs, err := ReadResults(path, true)
	if err != nil || len(rs) != 1 || !rs[0].Resolved {
		t.Fatalf("ReadResults = %+v, %v", rs, err)
	}
	if data, _ := os.ReadFile(path); string(data) != good {
		t.Fatalf("file after repair = %q, want the complete line only", data)
	}
	writeFile(t, path, good+`{"task_id":"a","attempt":0}`+"\n")
	if _, err := ReadResults(path, true); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("a bad complete line: err = %v, want one naming line 2", err)
	}
}

func TestSummarize(t *testing.T) {
	ex := gen.ExitReasonFinished
	mx := gen.ExitReasonMaxStepsExceeded
	msg := "setup failed"
	cost := 0.5
	rs := []gen.EvalAttempt{
		{TaskId: "a", Attempt: 1, Resolved: true, ExitReason: &ex, InputTokens: 100, OutputTokens: 10, DurationSeconds: 2, CostUsd: &cost},
		{TaskId: "a", Attempt: 2, Resolved: false, ExitReason: &mx, InputTokens: 50, DurationSeconds: 1},
		{TaskId: "b", Attempt: 1, Resolved: false, Error: &msg},
		{TaskId: "b", Attempt: 2, Resolved: false, ExitReason: &ex},
	}
	s := Summarize(rs)
	if s.Tasks != 2 || s.Attempts != 4 || s.Resolved != 1 || s.ResolvedRate != 0.25 {
		t.Fatalf("counts = %+v", s)
	}
	// The Wilson interval of 1 in 4 at 95 %: 0.0456 to 0.6994.
	if math.Abs(s.ResolvedLow-0.0456) > 1e-3 || math.Abs(s.ResolvedHigh-0.6994) > 1e-3 {
		t.Errorf("interval = %.4f–%.4f, want 0.0456–0.6994", s.ResolvedLow, s.ResolvedHigh)
	}
	// pass@1: a 1/2, b 0 → 0.25; pass@2: a 1, b 0 → 0.5.
	if len(s.PassAt) != 2 || s.PassAt[0] != 0.25 || s.PassAt[1] != 0.5 {
		t.Errorf("pass@k = %v, want [0.25 0.5]", s.PassAt)
	}
	if s.ExitReasons["finished"] != 2 || s.ExitReasons["max_steps_exceeded"] != 1 || s.ExitReasons["not_run"] != 1 {
		t.Errorf("exit reasons = %v", s.ExitReasons)
	}
	if s.InputTokens != 150 || s.OutputTokens != 10 || s.DurationSeconds != 3 || s.CostUsd == nil || *s.CostUsd != 0.5 {
		t.Errorf("totals = %+v", s)
	}
	if e := Summarize(nil); e.ResolvedRate != 0 || len(e.PassAt) != 0 || e.ResolvedHigh != 0 {
		t.Errorf("no results = %+v", e)
	}
}

func TestPassAtMatchesTheCombinatorialDefinition(t *testing.T) {
	binom := func(n, k int) float64 {
		r := 1.0
		for i := 1; i <= k; i++ {
			r = r * float64(n-k+i) / float64(i)
		}
		return r
	}
	for n := 1; n <= 8; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				want := 1.0
				if n-c >= k {
					want = 1 - binom(n-c, k)/binom(n, k)
				}
				if got := passAt(n, c, k); math.Abs(got-want) > 1e-12 {
					t.Errorf("passAt(%d, %d, %d) = %v, want %v", n, c, k, got, want)
				}
			}
		}
	}
}

func TestCompare(t *testing.T) {
	r := func(task string, n int, ok bool, steps int) gen.EvalAttempt {
		return gen.EvalAttempt{TaskId: task, Attempt: n, Resolved: ok, Steps: steps}
	}
	before := []gen.EvalAttempt{r("a", 1, false, 10), r("b", 1, true, 4), r("c", 1, true, 2)}
	after := []gen.EvalAttempt{r("a", 1, true, 6), r("b", 1, false, 8), r("d", 1, true, 1)}
	cs := Compare(before, after)
	if len(cs) != 4 || cs[0].Task != "a" || cs[3].Task != "d" {
		t.Fatalf("changes = %+v", cs)
	}
	if !cs[0].NewlySolved() || cs[0].StepsDelta != -4 || !cs[1].NewlyFailing() || cs[1].StepsDelta != 4 {
		t.Errorf("a, b = %+v, %+v", cs[0], cs[1])
	}
	if cs[2].AfterAttempts != 0 || cs[2].NewlyFailing() != true || cs[3].BeforeAttempts != 0 || !cs[3].NewlySolved() {
		t.Errorf("c, d = %+v, %+v", cs[2], cs[3])
	}
}

func TestPredictionsTakeAResolvedAttemptsPatch(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "1.diff"), filepath.Join(dir, "2.diff")
	writeFile(t, p1, "wrong\n")
	writeFile(t, p2, "right\n")
	ps, err := Predictions([]gen.EvalAttempt{
		{TaskId: "a", Attempt: 1, PatchPath: &p1},
		{TaskId: "a", Attempt: 2, Resolved: true, PatchPath: &p2},
		{TaskId: "b", Attempt: 1},
	}, "openai:m")
	if err != nil || len(ps) != 2 || ps[0].Patch != "right\n" || ps[0].Model != "openai:m" || ps[1].InstanceID != "b" || ps[1].Patch != "" {
		t.Fatalf("Predictions = %+v, %v", ps, err)
	}
}

// TestRunResumesAndRecordsNothingStopped: attempts recorded are not run
// again, and an attempt stopped by the caller is not recorded.
func TestRunResumesAndRecordsNothingStopped(t *testing.T) {
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if err := exec.Command("git", append([]string{"-C", repo}, args...)...).Run(); err != nil {
			t.Skipf("git: %v", err)
		}
	}
	tasks := []Task{{EvalTask: gen.EvalTask{Id: "a", Test: "true"}, Repo: repo}, {EvalTask: gen.EvalTask{Id: "b", Test: "true"}, Repo: repo}}
	if err := Prepare(context.Background(), tasks, t.TempDir(), "tasks.jsonl"); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ran := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Out: out, Parallel: 1, Attempts: 2,
		Run: func(ctx context.Context, a *Attempt) (Outcome, error) {
			ran[key(a.Task.Id, a.N)]++
			if _, err := os.Stat(filepath.Join(a.Dir, ".git")); err != nil {
				t.Errorf("attempt %s #%d has no worktree: %v", a.Task.Id, a.N, err)
			}
			if a.Task.Id == "b" && a.N == 2 {
				cancel() // Ctrl-C during the last attempt
			}
			return Outcome{Result: gen.RunResult{ExitReason: gen.ExitReasonFinished, StepsUsed: 1}}, nil
		},
		Command: func(ctx context.Context, a *Attempt, command string, setup bool) (gen.CheckResult, error) {
			return gen.CheckResult{Passed: true}, nil
		}}
	rs, err := Run(ctx, tasks, cfg)
	if err != context.Canceled || len(rs) != 3 {
		t.Fatalf("Run = %d results, %v; want 3 and context.Canceled", len(rs), err)
	}
	cfg.Run = func(ctx context.Context, a *Attempt) (Outcome, error) {
		ran[key(a.Task.Id, a.N)]++
		return Outcome{Result: gen.RunResult{ExitReason: gen.ExitReasonFinished}}, nil
	}
	if rs, err = Run(context.Background(), tasks, cfg); err != nil || len(rs) != 4 {
		t.Fatalf("resumed Run = %d results, %v; want 4", len(rs), err)
	}
	if ran["a-1"] != 1 || ran["a-2"] != 1 || ran["b-1"] != 1 || ran["b-2"] != 2 {
		t.Errorf("attempts ran %v; want each once, the stopped one again", ran)
	}
	if left, _ := os.ReadDir(filepath.Join(out, "worktrees")); len(left) != 0 {
		t.Errorf("worktrees left behind: %v", left)
	}
	if list, _ := exec.Command("git", "-C", repo, "worktree", "list").Output(); strings.Count(string(list), "\n") != 1 {
		t.Errorf("the repository still records worktrees:\n%s", list)
	}
}

// TestRunStopsOnAnErrorNotTheTasks: a run that cannot start stops the
// evaluation and records nothing, so that fixing the cause and running
// again runs every attempt.
func TestRunStopsOnAnErrorNotTheTasks(t *testing.T) {
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if err := exec.Command("git", append([]string{"-C", repo}, args...)...).Run(); err != nil {
			t.Skipf("git: %v", err)
		}
	}
	tasks := []Task{{EvalTask: gen.EvalTask{Id: "a", Test: "true"}, Repo: repo}}
	if err := Prepare(context.Background(), tasks, t.TempDir(), "tasks.jsonl"); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cfg := Config{Out: out, Parallel: 2, Attempts: 3,
		Run: func(ctx context.Context, a *Attempt) (Outcome, error) {
			return Outcome{}, errors.New("no API key")
		},
		Command: func(ctx context.Context, a *Attempt, command string, setup bool) (gen.CheckResult, error) {
			return gen.CheckResult{Passed: true}, nil
		}}
	rs, err := Run(context.Background(), tasks, cfg)
	if err == nil || !strings.Contains(err.Error(), "no API key") || len(rs) != 0 {
		t.Fatalf("Run = %d results, %v; want none and the run's error", len(rs), err)
	}
	if data, _ := os.ReadFile(filepath.Join(out, ResultsFile)); len(data) != 0 {
		t.Errorf("results recorded: %s", data)
	}
}
