package runner

import (
	"context"
	"fmt"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/wiring"
)

// RunSetup runs sp's setup command, when it has one, in the run's opened
// workspace, confined by the host's sandbox with the network allowed, as
// an evaluation's local setup is: fetching dependencies is what a setup
// is for. Its output is clipped as the completion check's is
// (tools.CommandCheck) and redacted as the run's transcript is
// (host.Redactor), and it is killed after the check's default timeout. nil means no setup; an error means it could
// not be run at all. The embedded runner calls it before agent.Run, the
// Temporal Open activity after the run's work tree is made; never
// Open, which also serves runs that must not repeat it.
func RunSetup(ctx context.Context, sp *Spec, s *wiring.Setup, host wiring.Config) (*gen.CheckResult, error) {
	if sp.Setup == nil {
		return nil, nil
	}
	policy := host.Sandbox
	policy.AllowNetwork = true
	policy.ObjectDirs = s.ObjectDirs // read when the workspace was opened
	sb, err := sandbox.New(policy)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	c := tools.NewCommandCheck(s.Workspace, *sp.Setup)
	c.Sandbox = sb
	c.Redactor = host.Redactor()
	res, err := c.Check(ctx)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	return &res, nil
}

// SetupFailed is the result of run id whose setup failed with res: it
// ends with setup_failed, before any model call.
func SetupFailed(id string, res gen.CheckResult) gen.RunResult {
	msg := fmt.Sprintf("the setup failed with exit code %d, so the model was not asked", res.ExitCode)
	return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonSetupFailed, Error: &msg, Setup: &res}
}
