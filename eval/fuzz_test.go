package eval

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// FuzzReadTasks: a task file is untrusted input (a benchmark's file); any
// bytes give tasks that meet the schema, or an error, never a panic.
func FuzzReadTasks(f *testing.F) {
	f.Add([]byte(`{"id":"a","repo":"repo","prompt":"p","test":"go test ./...","max_steps":3}` + "\n"))
	f.Add([]byte(`{"id":"a","repo":"repo","prompt":"p","test":"t"}` + "\n" + `{"id":"a","repo":"repo","prompt":"p","test":"t"}`))
	f.Add([]byte("{\"id\":\"\xff\"}\n\n[]\n"))
	id := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	dir := f.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "repo"), 0o700); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "tasks.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		tasks, err := ReadTasks(path)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, task := range tasks {
			if !id.MatchString(task.Id) || seen[task.Id] || task.Prompt == "" || task.Test == "" || task.MaxSteps != nil && *task.MaxSteps < 1 {
				t.Fatalf("accepted a task the schema refuses: %+v", task.EvalTask)
			}
			seen[task.Id] = true
		}
	})
}

// FuzzReadResults: a results file may be torn or edited; reading it gives
// results or an error, and repairing leaves only complete lines.
func FuzzReadResults(f *testing.F) {
	f.Add([]byte(`{"task_id":"a","attempt":1,"resolved":true,"steps":3,"input_tokens":10,"output_tokens":2,"duration_seconds":1.5}` + "\n{\"task"))
	f.Add([]byte("\n\n"))
	path := filepath.Join(f.TempDir(), ResultsFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rs, err := ReadResults(path, true)
		if err != nil {
			return
		}
		again, err := ReadResults(path, false)
		if err != nil || len(again) != len(rs) {
			t.Fatalf("after repair: %d results, %v; want %d", len(again), err, len(rs))
		}
		if after, _ := os.ReadFile(path); len(after) > 0 && after[len(after)-1] != '\n' {
			t.Fatalf("repair left a line without its newline: %q", after)
		}
	})
}
