package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// testProgram is a program of one command, run, with a few flags of each
// kind; what run saw is in got.
func testProgram(got *[]string) *Program {
	return &Program{Name: "prog", About: "about", Commands: []Command{
		{Name: "run", Summary: "run it", Examples: []string{"prog run --max-steps 3 task"}, Env: []string{TokenEnv},
			Run: func(_ context.Context, env *Env, args []string) int {
				fs := env.FlagSet("run", "[flags] TASK", "Runs it.")
				fs.Int("max-steps", 5, "the step budget")
				fs.String("script", "", "a `FILE` of responses")
				fs.Bool("json", false, "print JSON")
				if code, done := ParseFlags(fs, args); done {
					return code
				}
				*got = fs.Args()
				return ExitOK
			}},
		{Name: "version", Summary: "print the version", Run: Version},
	}}
}

func runProgram(t *testing.T, args ...string) (code int, stdout, stderr string, positional []string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = testProgram(&positional).Run(context.Background(), args, nil, &out, &errb)
	return code, out.String(), errb.String(), positional
}

// A usage error is two lines: the problem, naming the flag (as --flag),
// and where the usage is; never the flag list.
func TestUsageErrorIsTwoLines(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-step", "3", "t"}, "prog: run: unknown flag --max-step; did you mean --max-steps?"},
		{[]string{"run", "-jsn", "t"}, "prog: run: unknown flag --jsn; did you mean --json?"},
		{[]string{"run", "--bogus", "t"}, "prog: run: unknown flag --bogus"},
		{[]string{"run", "--max-steps", "x", "t"}, `prog: run: invalid value "x" for flag --max-steps: parse error`},
		{[]string{"run", "--json=maybe", "t"}, `prog: run: invalid boolean value "maybe" for --json: parse error`},
		{[]string{"run", "t", "--script"}, "prog: run: flag needs an argument: --script"},
		{[]string{"rn"}, `prog: unknown command "rn"; did you mean "run"?`},
		{[]string{"help", "rnu"}, `prog: help: unknown command "rnu"; did you mean "run"?`},
		{[]string{"fly"}, `prog: unknown command "fly"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr, _ := runProgram(t, tt.args...)
			hint := "run 'prog help run' for usage"
			if tt.args[0] != "run" {
				hint = "run 'prog help' for usage"
			}
			if want := tt.want + "\n" + hint + "\n"; code != ExitUsage || stderr != want || stdout != "" {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr, want)
			}
		})
	}
}

// Flags come before, between or after the positional arguments; after
// "--" everything is positional.
func TestParseFlagsInterleaved(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "a", "--json", "b", "--max-steps", "2"}, "a b"},
		{[]string{"run", "--json", "--", "a", "--max-steps", "2"}, "a --max-steps 2"},
		{[]string{"run", "-", "--json"}, "-"},
		{[]string{"run"}, ""},
	} {
		code, _, stderr, got := runProgram(t, tt.args...)
		if code != ExitOK || strings.Join(got, " ") != tt.want {
			t.Errorf("%q: exit %d, positional %q, want %q: %s", tt.args, code, got, tt.want, stderr)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	names := []string{"run", "chat", "demo", "serve", "max-steps", "max-observation-bytes", "workspace"}
	for typed, want := range map[string]string{
		"rn": "run", "serv": "serve", "max-step": "max-steps", "max-stesp": "max-steps", "workspce": "workspace",
		"fly": "", "x": "", "max": "", "observation-bytes": "",
	} {
		got := didYouMean(typed, names, "")
		if want == "" && got != "" || want != "" && got != `; did you mean "`+want+`"?` {
			t.Errorf("%s: %q, want %q", typed, got, want)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "abc", 3}, {"kitten", "sitting", 3}, {"rn", "run", 1}, {"max-stesp", "max-steps", 1}, {"ab", "ba", 1}, {"é", "e", 1}, {"same", "same", 0}} {
		if d := editDistance(tt.a, tt.b); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
	}
}

// The help page opens with the examples, names the environment variables
// with what they are for, and spells every flag --flag.
func TestHelpPage(t *testing.T) {
	for _, args := range [][]string{{"help", "run"}, {"run", "--help"}, {"run", "-h"}} {
		var out, errb bytes.Buffer
		code := testProgram(new([]string)).Run(context.Background(), args, nil, &out, &errb)
		page := out.String() + errb.String()
		want := "Usage: prog run [flags] TASK\n\nExamples:\n  prog run --max-steps 3 task\n\nRuns it.\n\nEnvironment:\n  SPECLOOP_TOKEN "
		if code != ExitOK || !strings.HasPrefix(page, want) {
			t.Fatalf("%q: exit %d:\n%s\nwant it to open with:\n%s", args, code, page, want)
		}
		for _, want := range []string{"  --json\n", "  --max-steps int\n    \tthe step budget (default 5)\n", "  --script FILE\n"} {
			if !strings.Contains(page, want) {
				t.Errorf("%q: the flags lack %q:\n%s", args, want, page)
			}
		}
		if m := regexp.MustCompile(`(?m)^  -[a-z]`).FindString(page); m != "" {
			t.Errorf("%q: a flag spelled -flag:\n%s", args, page)
		}
	}
	for name := range envHelp {
		if strings.TrimSpace(envHelp[name]) == "" {
			t.Errorf("%s has no description", name)
		}
	}
}

// `version` and `--version` print the program, its module version and
// the revision, on one line.
func TestVersion(t *testing.T) {
	_, v1, _, _ := runProgram(t, "version")
	code, v2, stderr, _ := runProgram(t, "--version")
	if code != ExitOK || v1 != v2 || !regexp.MustCompile(`^prog \S+ \(revision \S+, go\S+ \w+/\w+\)\n$`).MatchString(v1) {
		t.Fatalf("exit %d: %q, %q, %s", code, v1, v2, stderr)
	}
	if code, _, stderr, _ := runProgram(t, "version", "extra"); code != ExitUsage || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Fatalf("version extra: exit %d: %s", code, stderr)
	}
}
