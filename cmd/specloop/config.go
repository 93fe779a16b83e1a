package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/internal/config"
)

// configAbout is `specloop help config`: the files, their keys and who
// may set what.
var configAbout = "Prints the settings `specloop run` (and chat) would use in the workspace, and where each came\n" +
	"from: the command line's flags override the repository's file, which overrides yours.\n\n" +
	"Your file is $" + cli.ConfigHomeEnv + "/specloop/config.toml (else ~/.config/specloop/config.toml); the\n" +
	"repository's is .specloop/config.toml at its root (the nearest directory above the workspace with a\n" +
	".git). The keys are the flags of `specloop run` in snake_case (max_steps for --max-steps; a list for a\n" +
	"repeatable flag), and [profiles.NAME] tables apply over the top-level keys with --profile NAME:\n\n" +
	"  model = \"openai:gpt-4.1\"\n" +
	"  check = \"go test ./...\"\n" +
	"  max_steps = 100\n" +
	"  [profiles.local]\n" +
	"  model = \"openai:qwen2.5-coder-32b\"\n" +
	"  base_url = \"http://localhost:8000/v1\"\n" +
	"  context_window = 32768\n\n" +
	"A repository is untrusted: its file may set only " + repoSafeKeys + "\n" +
	"(approval only stricter, sandbox never none) unless your file trusts it by path:\n\n" +
	"  trusted_projects = [\"/home/me/src/myrepo\"]\n\n" +
	"A key it may not set is not applied, with a warning. Secrets never go in a file: model keys come\n" +
	"from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY) and the server token from --token-file or\n" +
	"$" + cli.TokenEnv + ". `specloop serve --config FILE` reads a file of the same format whose keys are serve's\n" +
	"flags. --no-config reads none."

var repoSafeKeys = strings.Join(config.RepoSafe, ", ")

// perInvocation are run flags that describe one invocation, not a setting:
// `specloop config` does not list them.
var perInvocation = map[string]bool{"prompt-file": true, "continue": true, "resume": true, "profile": true, "no-config": true, "json": true}

func configCmd(ctx context.Context, env *cli.Env, args []string) int {
	fs := env.FlagSet("config", "[--workspace DIR] [--profile NAME]", configAbout)
	workspace := fs.String("workspace", ".", "the workspace whose repository's file applies")
	profile := fs.String("profile", "", "apply [profiles.NAME] over the top-level settings")
	if code, done := cli.ParseNoArgs(fs, args); done {
		return code
	}
	run := runFlagSet(new(runFlags))
	cfg, err := cli.LocalConfig(run, *workspace, *profile)
	if err != nil {
		env.Errorf("config: %v", err)
		return exitUsage
	}
	writeConfig(env.Stdout, run, cfg)
	for _, w := range cfg.Warnings {
		fmt.Fprintln(env.Stderr, "specloop: warning: "+w)
	}
	return exitOK
}

// writeConfig prints every setting of fs as TOML, each with where it came
// from: what the files set first, then the defaults.
func writeConfig(w io.Writer, fs *flag.FlagSet, cfg cli.Configured) {
	if len(cfg.Files) == 0 {
		fmt.Fprintln(w, "# no configuration file: every setting is its default")
	} else {
		fmt.Fprintln(w, "# from "+strings.Join(cfg.Files, ", then "))
	}
	from := map[string]string{}
	for _, s := range cfg.Settings {
		from[s.Flag] = s.From
	}
	var set, defaults []string
	fs.VisitAll(func(f *flag.Flag) {
		if perInvocation[f.Name] {
			return
		}
		line := strings.ReplaceAll(f.Name, "-", "_") + " = " + tomlValue(f.Value)
		if src, ok := from[f.Name]; ok {
			set = append(set, line+"  # "+src)
		} else {
			defaults = append(defaults, line)
		}
	})
	for _, l := range set {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "# defaults")
	for _, l := range defaults {
		fmt.Fprintln(w, l)
	}
}

// tomlValue is v as a TOML value: numbers and booleans bare, anything else
// a quoted string.
func tomlValue(v flag.Value) string {
	if g, ok := v.(flag.Getter); ok {
		switch x := g.Get().(type) {
		case bool, int, int64, uint, uint64, float64:
			return fmt.Sprint(x)
		case time.Duration:
			return strconv.Quote(x.String())
		}
	}
	return strconv.Quote(v.String())
}

// runFlagSet is a new flag set of `specloop run` into f, for checking and
// applying settings without a run.
func runFlagSet(f *runFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	return fs
}

// runConfig is what the configuration files set for a new run (none for
// --no-config, and none for --continue or --resume, whose recorded flags
// already hold what the files set when the run began).
// A model on the command line (--model or --script) replaces the files'
// model with its base URL and context window: they go together.
func runConfig(fs *flag.FlagSet, f *runFlags) (cli.Configured, error) {
	if f.noConfig || f.continueID != "" || f.resume != "" {
		return cli.Configured{}, nil
	}
	cfg, err := cli.LocalConfig(runFlagSet(new(runFlags)), f.workspace, f.profile)
	if err == nil && (isSet(fs, "model") || isSet(fs, "script")) {
		cfg = cfg.Without("model", "base-url", "context-window", "script")
	}
	return cfg, err
}

// printConfigured prints the repository's refused keys and, unless the
// output is only JSON, the settings the files gave.
func printConfigured(env *cli.Env, cfg cli.Configured, quiet bool) {
	for _, w := range cfg.Warnings {
		fmt.Fprintln(env.Stderr, "specloop: warning: "+w)
	}
	if quiet || len(cfg.Settings) == 0 {
		return
	}
	var keys []string
	for _, s := range cfg.Settings {
		keys = append(keys, s.Flag)
	}
	fmt.Fprintf(env.Stderr, "settings from %s: --%s (specloop config shows them)\n", strings.Join(cfg.Files, ", "), strings.Join(keys, " --"))
}
