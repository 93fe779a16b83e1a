package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/specloop/specloop/internal/buildinfo"
	"github.com/specloop/specloop/telemetry"
)

// ConfigHomeEnv names the XDG base directory of a user's configuration.
const ConfigHomeEnv = "XDG_CONFIG_HOME"

// envHelp says what each environment variable a command reads is for, as
// its help page names it.
var envHelp = map[string]string{
	"OPENAI_API_KEY":     "the key of openai:MODEL models (keys come from the environment only)",
	"OPENAI_BASE_URL":    "the base URL of openai:MODEL models, unless --base-url is given",
	"ANTHROPIC_API_KEY":  "the key of anthropic:MODEL models",
	"ANTHROPIC_BASE_URL": "the base URL of anthropic:MODEL models, unless --base-url is given",
	TokenEnv:             "the server's bearer token, unless --token-file is given",
	StateHomeEnv:         "the state directory: transcripts, workspace locks, server data (default ~/.local/state)",
	ConfigHomeEnv:        "the user's configuration directory (default ~/.config)",
	telemetry.EnvEndpoint: "where --otel sends spans (and the other OTEL_EXPORTER_OTLP_* variables); set, it turns --otel on; " +
		telemetry.EnvSDKDisabled + "=true turns it off",
	"PATH": "commands (run_command, the check) get it, LANG, LC_*, TERM and the Go variables; --pass-env adds others",
}

// FlagSet returns the flag set of subcommand name, whose --help prints
// the command's help page: the usage line, its examples, about, the
// environment variables it reads and its flags.
func (e *Env) FlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(e.Prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s %s %s\n\n", e.Prog, name, synopsis)
		if e.cmd != nil && len(e.cmd.Examples) > 0 {
			fmt.Fprintf(w, "Examples:\n  %s\n\n", strings.Join(e.cmd.Examples, "\n  "))
		}
		fmt.Fprintln(w, about)
		if e.cmd != nil && len(e.cmd.Env) > 0 {
			fmt.Fprintln(w, "\nEnvironment:")
			for _, v := range e.cmd.Env {
				fmt.Fprintf(w, "  %-28s %s\n", v, envHelp[v])
			}
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			printDefaults(w, fs)
		}
	}
	return fs
}

// printDefaults is flag.PrintDefaults with the flags spelled --flag, as
// the docs write them.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if arg != "" {
			fmt.Fprintf(w, " %s", arg)
		}
		fmt.Fprintf(w, "\n    \t%s", strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch {
		case f.DefValue == "" || f.DefValue == "0" || f.DefValue == "false" || f.DefValue == "0s":
		case arg == "string":
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		default:
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// ParseFlags parses args, whose flags may come before, between or after
// the positional arguments (`run PROMPT --json` is `run --json PROMPT`;
// after "--" all are positional): fs.Args() are the positional ones.
// done reports that the command must return code: help was asked for
// (printed), or the flags were wrong (a usage error, printed with
// Usagef).
func ParseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	// The flag package prints its error and the whole usage; a usage
	// error is two lines here instead.
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer func() { fs.SetOutput(out); fs.Usage = usage }()
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			usage()
			return ExitOK, true
		}
		if err != nil {
			fs.SetOutput(out)
			return Usagef(fs, "%s", flagError(fs, err.Error())), true
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" || len(rest) == 0 {
			positional = append(positional, rest...)
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	// The positional arguments are what fs.Args() returns.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return 0, false
}

// ParseNoArgs is ParseFlags for a command that takes flags only: a
// positional argument is a usage error.
func ParseNoArgs(fs *flag.FlagSet, args []string) (code int, done bool) {
	if code, done = ParseFlags(fs, args); !done && fs.NArg() > 0 {
		return Usagef(fs, "unexpected argument %q", fs.Arg(0)), true
	}
	return code, done
}

// flagError spells the flag package's error msg the way the help does
// (--flag), and suggests the closest flag for an unknown one.
func flagError(fs *flag.FlagSet, msg string) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return "unknown flag --" + name + didYouMean(name, names, "--")
	}
	for _, s := range []string{" for flag -", " for -", "argument: -"} {
		if i := strings.Index(msg, s); i >= 0 {
			return msg[:i+len(s)] + "-" + msg[i+len(s):]
		}
	}
	return msg
}

// Usagef reports a usage error of the command fs parses for: the problem,
// which names the flag or argument at fault, and where the command's
// usage is; it returns the exit status of a usage error.
func Usagef(fs *flag.FlagSet, format string, args ...any) int {
	prog, cmd, _ := strings.Cut(fs.Name(), " ")
	name, _, _ := strings.Cut(cmd, " ")
	fmt.Fprintf(fs.Output(), "%s: %s: %s\nrun '%s help %s' for usage\n", prog, cmd, fmt.Sprintf(format, args...), prog, name)
	return ExitUsage
}

// didYouMean is `; did you mean "NAME"?` for the name of names closest to
// typed (prefixed by prefix), or "" when none is close.
func didYouMean(typed string, names []string, prefix string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(typed, n); d < bestD && (d == 1 || len(typed) >= 5) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	if prefix != "" {
		return "; did you mean " + prefix + best + "?"
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the optimal string alignment distance of a and b, in
// runes: insertions, deletions, substitutions and transpositions of two
// neighbours (the commonest typo) count one each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Version is the command `version` (also `--version`): the module
// version and the VCS revision the binary was built from.
func Version(_ context.Context, env *Env, args []string) int {
	fs := env.FlagSet("version", "", "Prints the module version, the VCS revision it was built from and the Go toolchain.")
	if code, done := ParseNoArgs(fs, args); done {
		return code
	}
	rev := buildinfo.Revision()
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(env.Stdout, "%s %s (revision %s, %s %s/%s)\n", env.Prog, buildinfo.Version(), rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return ExitOK
}
