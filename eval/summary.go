package eval

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/specloop/specloop/gen"
)

// Summarize adds the results up: the resolved rate with its 95 % Wilson
// score interval, pass@k for k up to the most attempts a task has, the
// attempts by exit reason, tokens, cost and time.
func Summarize(results []gen.EvalAttempt) gen.EvalSummary {
	s := gen.EvalSummary{ExitReasons: map[string]int{}, PassAt: []float64{}}
	per := perTask(results)
	var cost float64
	costs := false
	for _, r := range results {
		s.Attempts++
		if r.Resolved {
			s.Resolved++
		}
		switch {
		case r.ExitReason != nil:
			s.ExitReasons[string(*r.ExitReason)]++
		case r.Error != nil:
			s.ExitReasons["not_run"]++
		}
		s.InputTokens += r.InputTokens
		s.OutputTokens += r.OutputTokens
		s.DurationSeconds += r.DurationSeconds
		if r.CostUsd != nil {
			cost += *r.CostUsd
			costs = true
		}
	}
	s.Tasks = len(per)
	if costs {
		s.CostUsd = &cost
	}
	s.ResolvedRate, s.ResolvedLow, s.ResolvedHigh = wilson(s.Resolved, s.Attempts)
	most := 0
	for _, c := range per {
		most = max(most, c.n)
	}
	for k := 1; k <= most; k++ {
		sum, tasks := 0.0, 0
		for _, c := range per {
			if c.n >= k {
				sum += passAt(c.n, c.c, k)
				tasks++
			}
		}
		s.PassAt = append(s.PassAt, sum/float64(tasks))
	}
	return s
}

// wilson is the rate of c in n with its 95 % Wilson score interval; all
// zero when n is.
func wilson(c, n int) (rate, low, high float64) {
	if n == 0 {
		return 0, 0, 0
	}
	const z = 1.959963984540054
	p, fn := float64(c)/float64(n), float64(n)
	d := 1 + z*z/fn
	center := (p + z*z/(2*fn)) / d
	half := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / d
	return p, max(0, center-half), min(1, center+half)
}

// passAt is the unbiased estimate of pass@k from n attempts of which c
// passed (Chen et al., 2021): 1 - C(n-c, k) / C(n, k).
func passAt(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// WriteMarkdown writes s as a Markdown report.
func WriteMarkdown(w io.Writer, s gen.EvalSummary) error {
	var b []byte
	b = fmt.Appendf(b, "| | |\n|---|---|\n")
	b = fmt.Appendf(b, "| tasks | %d |\n| attempts | %d |\n", s.Tasks, s.Attempts)
	b = fmt.Appendf(b, "| resolved | %d (%.1f %%, 95 %% CI %.1f–%.1f %%) |\n", s.Resolved, 100*s.ResolvedRate, 100*s.ResolvedLow, 100*s.ResolvedHigh)
	for i, p := range s.PassAt {
		b = fmt.Appendf(b, "| pass@%d | %.1f %% |\n", i+1, 100*p)
	}
	for _, reason := range slices.Sorted(maps.Keys(s.ExitReasons)) {
		b = fmt.Appendf(b, "| %s | %d |\n", reason, s.ExitReasons[reason])
	}
	b = fmt.Appendf(b, "| tokens | %d in, %d out |\n", s.InputTokens, s.OutputTokens)
	if s.CostUsd != nil {
		b = fmt.Appendf(b, "| cost | $%.2f |\n", *s.CostUsd)
	}
	b = fmt.Appendf(b, "| attempt time | %s |\n", seconds(s.DurationSeconds))
	_, err := w.Write(b)
	return err
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond)
}

// task is what one task's attempts add up to: n attempts, c of them
// resolved, and their steps, tokens and cost.
type task struct {
	n, c                int
	steps, tokens, cost float64
}

// perTask adds the results up task by task.
func perTask(rs []gen.EvalAttempt) map[string]*task {
	m := map[string]*task{}
	for _, r := range rs {
		t := m[r.TaskId]
		if t == nil {
			t = &task{}
			m[r.TaskId] = t
		}
		t.n++
		if r.Resolved {
			t.c++
		}
		t.steps += float64(r.Steps)
		t.tokens += float64(r.InputTokens + r.OutputTokens)
		if r.CostUsd != nil {
			t.cost += *r.CostUsd
		}
	}
	return m
}

// Change is how one task's attempts differ between two evaluations.
type Change struct {
	Task string
	// Before and After are the resolved attempts over the attempts, in
	// each; Attempts 0 when the task is not in it.
	BeforeResolved, BeforeAttempts int
	AfterResolved, AfterAttempts   int
	// StepsDelta, TokensDelta and CostDelta are the mean per attempt
	// after minus before.
	StepsDelta, TokensDelta, CostDelta float64
}

// NewlySolved: no attempt resolved it before, one does after.
func (c Change) NewlySolved() bool { return c.BeforeResolved == 0 && c.AfterResolved > 0 }

// NewlyFailing: an attempt resolved it before, none does after.
func (c Change) NewlyFailing() bool { return c.BeforeResolved > 0 && c.AfterResolved == 0 }

// Compare lines up two evaluations' results task by task, in task order.
func Compare(before, after []gen.EvalAttempt) []Change {
	b, a := perTask(before), perTask(after)
	ids := slices.Collect(maps.Keys(b))
	for id := range a {
		if b[id] == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []Change
	for _, id := range ids {
		x, y := b[id], a[id]
		c := Change{Task: id}
		if x != nil {
			c.BeforeResolved, c.BeforeAttempts = x.c, x.n
		}
		if y != nil {
			c.AfterResolved, c.AfterAttempts = y.c, y.n
		}
		if x != nil && y != nil {
			n, m := float64(x.n), float64(y.n)
			c.StepsDelta = y.steps/m - x.steps/n
			c.TokensDelta = y.tokens/m - x.tokens/n
			c.CostDelta = y.cost/m - x.cost/n
		}
		out = append(out, c)
	}
	return out
}
