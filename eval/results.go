package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/specloop/specloop/gen"
)

// ReadResults reads a results file; a missing one has none. A last line
// without its newline is what a crash mid-write leaves: it is left out,
// and with repair the file is cut back to its last complete line, so that
// the next line appended starts a line of its own. Any other bad line is
// an error naming it: nothing is appended to a file that is not
// understood.
func ReadResults(path string, repair bool) ([]gen.EvalAttempt, error) {
	data, err := readBounded(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ls, torn := lines(data, true)
	var out []gen.EvalAttempt
	for _, l := range ls {
		var r gen.EvalAttempt
		if err := attemptSchema.Parse(l.text, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w (move the file away to start afresh)", path, l.n, err)
		}
		out = append(out, r)
	}
	if len(torn) > 0 && repair {
		if err := os.Truncate(path, int64(len(data)-len(torn))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Prediction is one line of SWE-bench's predictions format.
type Prediction struct {
	InstanceID string `json:"instance_id"`
	Model      string `json:"model_name_or_path"`
	Patch      string `json:"model_patch"`
}

// Predictions are the results in SWE-bench's format, one a task: the patch
// of its first resolved attempt, else of its first attempt.
func Predictions(results []gen.EvalAttempt, model string) ([]Prediction, error) {
	best := map[string]gen.EvalAttempt{}
	var order []string
	for _, r := range results {
		b, seen := best[r.TaskId]
		if !seen {
			order = append(order, r.TaskId)
		}
		if !seen || !b.Resolved && (r.Resolved || r.Attempt < b.Attempt) {
			best[r.TaskId] = r
		}
	}
	var out []Prediction
	for _, id := range order {
		p := Prediction{InstanceID: id, Model: model}
		if r := best[id]; r.PatchPath != nil {
			data, err := os.ReadFile(*r.PatchPath)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			p.Patch = string(data)
		}
		out = append(out, p)
	}
	return out, nil
}
