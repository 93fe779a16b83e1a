package tools

import (
	"context"
	"errors"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
)

// shellPath is the shell commands run in.
const shellPath = "/bin/sh"

// runCmd runs cmd in ws through sb: confined to the workspace, with an
// environment built from an allowlist (plus cmd.Env), and every process it
// started killed when it ends, times out or ctx is done. The working
// directory is the workspace's open directory handle, not its path looked
// up again. A cancelled ctx returns ctx's error; a command that cannot
// start is a *sandbox.StartError.
func runCmd(ctx context.Context, sb *sandbox.Sandbox, ws *Workspace, cmd sandbox.Command) (sandbox.Result, error) {
	dir, err := ws.root.Open(".")
	if err != nil {
		return sandbox.Result{}, &sandbox.StartError{Err: err}
	}
	defer dir.Close()
	cmd.Dir, cmd.DirPath = dir, ws.Dir()
	return sb.Run(ctx, cmd)
}

// gitGuardMessage returns the message of a command's call that the
// sandbox's git guard failed (see sandbox.GitError): the command made or
// changed a git directory, or a hook or configuration file a repository
// takes from the work tree, and that was undone.
func gitGuardMessage(err error) (string, bool) {
	var ge *sandbox.GitError
	if !errors.As(err, &ge) {
		return "", false
	}
	return ge.Error() + "; git directories and the hooks and configuration they take from the work tree are the person's, never a command's to make or change", true
}

// sandboxInfo converts the confinement in effect to its spec form.
func sandboxInfo(info sandbox.Info) *gen.SandboxInfo {
	return &gen.SandboxInfo{
		Backend:     gen.SandboxInfoBackend(info.Backend),
		LandlockAbi: info.LandlockABI,
		Network:     info.AllowNetwork,
		GitWrites:   info.AllowGitWrites,
	}
}

// SandboxInfo returns how the runtime's commands are confined; nil when it
// offers no commands.
func (r *Runtime) SandboxInfo() *gen.SandboxInfo {
	if r.env.Sandbox == nil || r.enabled["run_command"] == nil {
		return nil
	}
	return sandboxInfo(r.env.Sandbox.Info())
}
