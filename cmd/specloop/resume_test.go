package main

import (
	"bufio"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
)

// A specloop serve killed (SIGKILL) while a run waits for the model's
// second step: served again on the same data directory, the run goes on
// from its transcript and ends as a run that was never killed.
func TestServeResumesAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs specloop serve as a process")
	}
	clearProviderEnv(t)
	t.Setenv(cli.TokenEnv, "")
	model := &blockingOpenAI{entered: make(chan struct{}, 1)}
	srv := httptest.NewServer(model)
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test-resume")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	data, root := t.TempDir(), t.TempDir()
	window := 50000
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: "Compute 12 x 7, then add 1."}}
	if err := req.Model.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "m", ContextWindow: &window}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	model.block.Store(true)
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data", data, "--workspace-root", root)
	cmd.Env = append(os.Environ(), selfServerEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := ""
	for sc := bufio.NewScanner(stderr); url == "" && sc.Scan(); {
		if m := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	c, err := sdk.New(url, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	killed, err := c.CreateRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-model.entered:
	case <-ctx.Done():
		t.Fatal("the run never reached its second step")
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	model.block.Store(false)

	url, _ = startServe(t, "--data", data, "--workspace-root", root)
	if c, err = sdk.New(url, sdk.Config{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Wait(ctx, killed.Id)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := c.CreateRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Wait(ctx, fresh.Id)
	if err != nil {
		t.Fatal(err)
	}
	g, w := got.Result, want.Result
	if g.ExitReason != gen.ExitReasonFinished || g.ExitReason != w.ExitReason || g.StepsUsed != w.StepsUsed || *g.Answer != *w.Answer || *g.Usage != *w.Usage {
		t.Fatalf("resumed %+v, uninterrupted %+v", g, w)
	}
}
