package temporal

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// commandsRefusedType is the ApplicationError type of a run's command
// (its setup, its completion check) that a worker whose commands are off
// refuses.
const commandsRefusedType = "commands_refused"

// refuseCommand returns the error of a run's command refused (what says
// which, and what it means for the run), on a worker
// started without --allow-commands (Setup.DisableCommands), which runs no
// command of a run whatever the API server that accepted it allows; nil
// when the worker allows commands.
func (a *Activities) refuseCommand(what string) error {
	if !a.Setup.DisableCommands {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(what+": this worker was started without --allow-commands"+
		" and runs no command of a run (give the workers --allow-commands, as the API server that accepted the run has)", commandsRefusedType, nil)
}

// refuseCommands returns the refusal of run sp's setup command, else of
// its completion check, on a worker started without --allow-commands: the
// Open activity refuses such a run before anything of it runs.
func (a *Activities) refuseCommands(sp *runner.Spec) error {
	switch {
	case sp.Setup != nil:
		return a.refuseCommand("the setup command was refused, so the model was not asked")
	case sp.CheckCommand() != "":
		return a.refuseCommand("the completion check was refused, so the model was not asked")
	}
	return nil
}

// refusal returns the message of err when it is an activity's
// refusal of a run's command (refuseCommand), "" otherwise.
func refusal(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == commandsRefusedType {
		return app.Message()
	}
	return ""
}

// commandsRefused ends run r, whose Open activity refused a command of it
// with msg (its setup command, its completion check: refuseCommands; a
// custom tool that runs one: customTools), before any model call:
// setup_failed for a run with a setup (which never ran: the result has no
// setup), internal_error otherwise; its trace ends with run_finished.
func (r *wfRun) commandsRefused(msg string) (gen.RunResult, error) {
	reason := gen.ExitReasonInternalError
	if r.in.Setup != nil {
		reason = gen.ExitReasonSetupFailed
	}
	msg = agent.ClipMessage(msg)
	return r.endBeforeTheModel(gen.RunResult{RunId: &r.in.ID, ExitReason: reason, Error: &msg}, r.shared, eventsActivity)
}
