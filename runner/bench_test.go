package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/wiring"
)

const finishLine = `{"type":"finish","answer":"done"}`

// What `specloop run --script` with one step would cost through the whole
// runner (a data directory, the durable run log, the scheduler), against
// the light path it takes: runner.Open and agent.Run.
//
//	go test -run '^$' -bench OneStep ./runner/
func BenchmarkOneStepThroughTheRunner(b *testing.B) {
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: "say done"}}
	if err := req.Model.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{finishLine}}); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	for b.Loop() {
		rn, err := runner.New(runner.Config{DataDir: b.TempDir(), WorkspaceRoot: root})
		if err != nil {
			b.Fatal(err)
		}
		v, err := rn.Create(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for v.Status != gen.RunStatusFinished {
			time.Sleep(50 * time.Microsecond)
			if v, err = rn.Get(v.Id); err != nil {
				b.Fatal(err)
			}
		}
		if err := rn.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOneStepThroughOpen(b *testing.B) {
	root := b.TempDir()
	for b.Loop() {
		sp := &runner.Spec{CreateRunRequest: gen.CreateRunRequest{Task: gen.Task{Prompt: "say done"}}}
		setup, err := runner.Open(context.Background(), sp, wiring.Config{Dir: root, DisableCommands: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := agent.Run(context.Background(), sp.Task, model.NewScript(finishLine), setup.Options); err != nil {
			b.Fatal(err)
		}
		setup.Close()
	}
}
