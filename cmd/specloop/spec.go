package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/wiring"
)

func specCmd(_ context.Context, env *cmdEnv, args []string) int {
	fs := newFlagSet(env, "spec", "", "Prints the embedded OpenAPI document (spec/agent.yaml).")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if _, err := env.stdout.Write(spec.YAML()); err != nil {
		return exitInternal
	}
	return exitOK
}

func toolsCmd(_ context.Context, env *cmdEnv, args []string) int {
	fs := newFlagSet(env, "tools", "[--json] [--workspace DIR] [--no-commands]",
		"Lists the tools a model is offered, as derived from the spec.")
	asJSON := fs.Bool("json", false, "print the tool specs as a JSON ToolList")
	workspace := fs.String("workspace", ".", "the workspace the file tools would work in")
	noCommands := fs.Bool("no-commands", false, "leave run_command out")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	// Only the tool list is needed: no command runs, so no sandbox.
	setup, err := wiring.Open(wiring.Config{Dir: *workspace, DisableCommands: *noCommands, Sandbox: sandbox.Policy{Backend: sandbox.None}})
	var we *wiring.Error
	if errors.As(err, &we) && we.Part == wiring.PartWorkspace {
		env.errorf("%v", we.Err)
		return exitUsage
	}
	if err != nil {
		env.errorf("%v", err)
		return exitInternal
	}
	defer setup.Close()
	rt := setup.Runtime
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(gen.ToolList{Tools: rt.Specs()}); err != nil {
			return exitInternal
		}
		return exitOK
	}
	for _, s := range rt.Specs() {
		fmt.Fprintf(env.stdout, "%s\n    %s\n    returns: %s\n    errors:  %s\n", s.Name, s.Description, s.OutputDescription, s.ErrorDescription)
	}
	return exitOK
}

// newFlagSet returns a flag set whose -h prints a usage that helps.
func newFlagSet(env *cmdEnv, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: specloop %s %s\n\n%s\n", name, synopsis, about)
		if hasFlags(fs) {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args; done reports that the command must return code
// (help was asked for, or the flags were wrong).
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(fs.Output())
			return exitOK, true
		}
		return exitUsage, true
	}
	return 0, false
}
