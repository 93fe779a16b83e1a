package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/wiring"
)

func specCmd(_ context.Context, env *cli.Env, args []string) int {
	fs := env.FlagSet("spec", "", "Prints the embedded OpenAPI document (spec/agent.yaml).")
	if code, done := cli.ParseNoArgs(fs, args); done {
		return code
	}
	if _, err := env.Stdout.Write(spec.YAML()); err != nil {
		return exitInternal
	}
	return exitOK
}

func toolsCmd(_ context.Context, env *cli.Env, args []string) int {
	fs := env.FlagSet("tools", "[--json] [--workspace DIR] [--no-commands]",
		"Lists the tools a model is offered, as derived from the spec.")
	asJSON := fs.Bool("json", false, "print the tool specs as a JSON ToolList")
	workspace := fs.String("workspace", ".", "the workspace the file tools would work in")
	noCommands := fs.Bool("no-commands", false, "leave run_command out")
	if code, done := cli.ParseNoArgs(fs, args); done {
		return code
	}
	// Only the tool list is needed: no command runs, so no sandbox.
	setup, err := wiring.Open(wiring.Config{Dir: *workspace, DisableCommands: *noCommands, Sandbox: sandbox.Policy{Backend: sandbox.None}})
	var we *wiring.Error
	if errors.As(err, &we) && we.Part == wiring.PartWorkspace {
		return env.Fail(exitUsage, "%v", we.Err)
	}
	if err != nil {
		return env.Fail(exitInternal, "%v", err)
	}
	defer setup.Close()
	rt := setup.Runtime
	if *asJSON {
		if err := writeJSON(env.Stdout, gen.ToolList{Tools: rt.Specs()}, "  "); err != nil {
			return exitInternal
		}
		return exitOK
	}
	for _, s := range rt.Specs() {
		fmt.Fprintf(env.Stdout, "%s\n    %s\n    returns: %s\n    errors:  %s\n", s.Name, s.Description, s.OutputDescription, s.ErrorDescription)
	}
	return exitOK
}
