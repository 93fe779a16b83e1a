package runner_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// none is the sandbox every test here can use: the machine running the
// tests may have neither bwrap nor Landlock.
var none = sandbox.Policy{Backend: sandbox.None, AllowNetwork: true}

func toolNames(rt *tools.Runtime) []string {
	var names []string
	for _, s := range rt.Specs() {
		names = append(names, s.Name)
	}
	return names
}

// TestOpenMapsEveryField: each field of the spec and of its host reaches
// the Options, the runtime and the check, and the runtime and the check
// share the one sandbox Open resolved.
func TestOpenMapsEveryField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var buf bytes.Buffer
	check, steps, budget, obsBytes, obsLines, policy := "true", 7, int64(99), 2048, 32, gen.ApprovalPolicyAlways
	sp := &runner.Spec{
		CreateRunRequest: gen.CreateRunRequest{Check: &check, MaxSteps: &steps, TokenBudget: &budget,
			MaxObservationBytes: &obsBytes, MaxObservationLines: &obsLines, ApprovalPolicy: &policy},
		ID: "run-1", RecordRaw: true,
		Approver: agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
			return agent.Approval{Decision: gen.ApprovalDecisionApprove}, nil
		}),
	}
	s, err := runner.Open(context.Background(), sp, wiring.Config{Dir: dir, TraceWriter: &buf, Sandbox: none, CheckEnv: []string{"A=b"}, TraceSync: trace.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := s.Options
	if o.MaxSteps != 7 || o.TokenBudget != 99 || o.RunID != "run-1" || !o.RecordRaw || o.MaxObservationBytes != 2048 || o.MaxObservationLines != 32 ||
		o.ApprovalPolicy != policy || o.Approver == nil {
		t.Errorf("options: %+v", o)
	}
	if o.Tools != s.Runtime || o.Check != s.Check || o.Trace != s.Trace || s.Trace == nil {
		t.Errorf("the options do not hold the setup's parts")
	}
	if s.Workspace.Dir() != dir {
		t.Errorf("workspace %s, want %s", s.Workspace.Dir(), dir)
	}
	if !slices.Contains(toolNames(s.Runtime), "run_command") {
		t.Errorf("commands are on but not offered: %v", toolNames(s.Runtime))
	}
	if s.Check.Command() != "true" || !slices.Equal(s.Check.Env, []string{"A=b"}) {
		t.Errorf("check: %+v", s.Check)
	}
	// Unconfined, commands can reach the network and write .git.
	want := &gen.SandboxInfo{Backend: gen.SandboxInfoBackendNone, Network: true, GitWrites: true}
	if got := s.Runtime.SandboxInfo(); got == nil || *got != *want {
		t.Errorf("runtime sandbox %+v, want %+v", got, want)
	}
	if s.Check.Sandbox != s.Sandbox || s.Sandbox.Info().Backend != sandbox.None {
		t.Errorf("the check is not confined by the resolved sandbox")
	}

	// The options run: the trace goes to the writer, the check is run.
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "p"},
		model.NewScript(`{"type":"finish","answer":"done"}`), s.Options)
	if err != nil || res.ExitReason != gen.ExitReasonFinished || res.Check == nil || !res.Check.Passed {
		t.Fatalf("run: %v %+v", err, res)
	}
	log, err := trace.Read(&buf)
	if err != nil || len(log.Events) == 0 || log.Events[0].RunId != "run-1" {
		t.Fatalf("trace: %v %+v", err, log)
	}
}

// A run names its MCP servers among its host's: a name the host lacks, or
// one named twice, is an Invalid runner.Error naming the field, before
// anything is opened.
func TestOpenPicksTheNamedMCPServers(t *testing.T) {
	t.Parallel()
	host := wiring.Config{Dir: t.TempDir(), Sandbox: none, DisableCommands: true, MCPServers: []mcpclient.Server{{Name: "docs"}}}
	for _, names := range [][]string{{"web"}, {"docs", "docs"}} {
		sp := &runner.Spec{CreateRunRequest: gen.CreateRunRequest{McpServers: &names}}
		_, err := runner.Open(context.Background(), sp, host)
		var re *runner.Error
		if !errors.As(err, &re) || re.Kind != runner.Invalid || re.Field == "" {
			t.Errorf("mcp_servers %v: %v, want an Invalid error naming the field", names, err)
		}
	}
}

// A run with a provider model gets budgets real tasks fit unless it gives
// its own; a script model keeps the seed's; the most a token budget may be
// is no limit.
func TestProviderRunsGetRealBudgets(t *testing.T) {
	t.Parallel()
	var openai, script gen.ModelConfig
	if err := openai.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "gpt-4.1"}); err != nil {
		t.Fatal(err)
	}
	if err := script.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	seven, unlimited := 7, int64(gen.MaxCreateRunRequestTokenBudget)
	for _, c := range []struct {
		name   string
		req    gen.CreateRunRequest
		steps  int
		tokens int64
	}{
		{"provider", gen.CreateRunRequest{Model: openai}, gen.ProviderDefaultCreateRunRequestMaxSteps, gen.ProviderDefaultCreateRunRequestTokenBudget},
		{"provider with its own", gen.CreateRunRequest{Model: openai, MaxSteps: &seven, TokenBudget: &unlimited}, 7, 0},
		{"script", gen.CreateRunRequest{Model: script}, agent.DefaultMaxSteps, 0},
	} {
		opts := (&runner.Spec{CreateRunRequest: c.req}).Options()
		if opts.MaxSteps != c.steps || opts.TokenBudget != c.tokens {
			t.Errorf("%s: max steps %d, token budget %d; want %d, %d", c.name, opts.MaxSteps, opts.TokenBudget, c.steps, c.tokens)
		}
	}
}
