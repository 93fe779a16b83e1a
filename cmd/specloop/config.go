package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/internal/config"
	"github.com/specloop/specloop/internal/projectdocs"
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
	cfg, err := localConfig(run, *workspace, *profile)
	if err != nil {
		return env.Fail(exitUsage, "config: %v", err)
	}
	writeConfig(env.Stdout, run, cfg)
	for _, w := range cfg.warnings {
		fmt.Fprintln(env.Stderr, "specloop: warning: "+w)
	}
	return exitOK
}

// configFiles is what the configuration files set for a run.
type configFiles struct {
	files    []string         // the files read, the user's first
	settings []config.Setting // the flags they set, in the order applied
	warnings []string         // the repository's keys not applied
}

// args are the settings as flags, to go in front of the command line's:
// its flags then win, and whatever records the arguments (a run's
// request, --continue, --resume) sees one list.
func (c configFiles) args() []string {
	var args []string
	for _, s := range c.settings {
		args = append(args, "--"+s.Flag+"="+s.Value)
	}
	return args
}

// localConfig reads the user's file and the file of the repository that
// holds workspace, and returns what they set for the flags of fresh (a
// new, unparsed flag set of run), profile's tables included.
func localConfig(fresh *flag.FlagSet, workspace, profile string) (configFiles, error) {
	var c configFiles
	userPath, err := config.UserPath()
	if err != nil {
		return c, err
	}
	user, err := config.Read(userPath)
	if err != nil {
		return c, err
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return c, fmt.Errorf("--workspace: %w", err)
	}
	root := projectdocs.RepoRoot(ws)
	repo, err := config.ReadRepo(root)
	if err != nil {
		return c, err
	}
	for _, f := range []*config.File{user, repo} {
		if f != nil {
			c.files = append(c.files, f.Path)
		}
	}
	c.settings, c.warnings, err = config.Apply(fresh, user, repo, root, profile)
	return c, err
}

// writeConfig prints every setting of fs as TOML, each with where it came
// from: what the files set first, then the defaults.
func writeConfig(w io.Writer, fs *flag.FlagSet, cfg configFiles) {
	if len(cfg.files) == 0 {
		fmt.Fprintln(w, "# no configuration file: every setting is its default")
	} else {
		fmt.Fprintln(w, "# from "+strings.Join(cfg.files, ", then "))
	}
	from := map[string]string{}
	for _, s := range cfg.settings {
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
func runConfig(fs *flag.FlagSet, f *runFlags) (configFiles, error) {
	if f.noConfig || f.continueID != "" || f.resume != "" {
		return configFiles{}, nil
	}
	cfg, err := localConfig(runFlagSet(new(runFlags)), f.workspace, f.profile)
	if err == nil && (isSet(fs, "model") || isSet(fs, "script")) {
		cfg.settings = slices.DeleteFunc(cfg.settings, func(s config.Setting) bool {
			return slices.Contains([]string{"model", "base-url", "context-window", "script"}, s.Flag)
		})
	}
	return cfg, err
}

// printConfigured prints the repository's refused keys and, unless the
// output is only JSON, the settings the files gave.
func printConfigured(env *cli.Env, cfg configFiles, quiet bool) {
	for _, w := range cfg.warnings {
		fmt.Fprintln(env.Stderr, "specloop: warning: "+w)
	}
	if quiet || len(cfg.settings) == 0 {
		return
	}
	var keys []string
	for _, s := range cfg.settings {
		keys = append(keys, s.Flag)
	}
	fmt.Fprintf(env.Stderr, "settings from %s: --%s (specloop config shows them)\n", strings.Join(cfg.files, ", "), strings.Join(keys, " --"))
}
