package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/transcript"
)

func showCmd(ctx context.Context, env *cli.Env, args []string) int {
	env = runText(env)
	fs := env.FlagSet("show", "[--follow] (RUN_ID | FILE) | [--follow] --remote URL RUN_ID",
		"Prints what a run said and did, for a person: the task, the model's actions with their arguments,\n"+
			"what each tool returned, feedback, approvals, the check and the result with its patch. RUN_ID is\n"+
			"a run of specloop run, whose transcript is in "+cli.StateDirUsage("runs/RUN_ID")+"; FILE is\n"+
			"a transcript file; with --remote, a run of that server. Secrets were redacted when it was written.")
	follow := fs.Bool("follow", false, "print the run as it goes, until it ends")
	remote := fs.String("remote", "", "read the transcript of a run of the specloop server at this base URL")
	tokenFile := fs.String("token-file", "", "with --remote: a file holding the server's bearer token (default: $"+cli.TokenEnv+")")
	if code, done := cli.ParseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		return cli.Usagef(fs, "expected one RUN_ID or FILE, got %d arguments", fs.NArg())
	}
	if *remote != "" {
		return showRemote(ctx, env, *remote, *tokenFile, fs.Arg(0), *follow)
	}
	path, err := transcriptOf(fs.Arg(0))
	if err != nil {
		return env.Fail(exitUsage, "show: %v", err)
	}
	if *follow {
		r := transcript.NewRenderer(env.Stdout)
		err := transcript.Follow(ctx, path, func(e gen.TranscriptEntry) error { return r.Entry(&e) })
		if err != nil && !errors.Is(err, context.Canceled) {
			return env.Fail(exitInternal, "show: %s: %v", path, err)
		}
		return exitOK
	}
	return printRecord(env, "show: ", path, transcript.Read, transcript.Render)
}

// printRecord prints the record at path (a transcript or a trace) with
// render, as read reads it; a torn last line (a crash mid-write) is
// reported after the entries before it. prefix starts the messages.
func printRecord[L any](env *cli.Env, prefix, path string, read func(io.Reader) (L, error), render func(io.Writer, L) error) int {
	f, err := os.Open(path)
	if err != nil {
		return env.Fail(exitUsage, "%s%v", prefix, err)
	}
	defer f.Close()
	log, rerr := read(f)
	if err := render(env.Stdout, log); err != nil {
		return exitInternal
	}
	if rerr != nil {
		return env.Fail(exitInternal, "%s%s: %v", prefix, path, rerr)
	}
	return exitOK
}

// showRemote prints the transcript of run id of the server at url; with
// follow, from its event stream with content, as the run goes, until it
// ends.
func showRemote(ctx context.Context, env *cli.Env, url, tokenFile, id string, follow bool) int {
	token, err := cli.ReadToken(tokenFile)
	if err != nil {
		return env.Fail(exitUsage, "show: %v", err)
	}
	c, err := sdk.New(url, sdk.Config{Token: token})
	if err != nil {
		return env.Fail(exitUsage, "show: --remote: %v", err)
	}
	var entries []gen.TranscriptEntry
	if follow {
		r := transcript.NewRenderer(env.Stdout)
		for it, serr := range c.Stream(ctx, id, 0) {
			if err = serr; err != nil {
				break
			}
			if it.Entry != nil {
				if err := r.Entry(it.Entry); err != nil {
					return exitInternal
				}
			}
		}
	} else {
		entries, err = c.Transcript(ctx, id)
	}
	if err != nil {
		env.Errorf("show: %v", err)
		if errors.Is(err, sdk.ErrNotFound) {
			return exitUsage
		}
		return exitInternal
	}
	if !follow {
		if err := transcript.Render(env.Stdout, &transcript.Log{Entries: entries}); err != nil {
			return exitInternal
		}
	}
	return exitOK
}

// transcriptOf is the transcript file arg names: a file, or the run id of
// a run of specloop run.
func transcriptOf(arg string) (string, error) {
	return runRecord(arg, transcript.FileName, "transcript")
}

// runRecord is the file arg names: a file, or the record name (what) of
// the run of specloop run whose id arg is, in the state directory.
func runRecord(arg, name, what string) (string, error) {
	if _, err := os.Stat(arg); err == nil || !ident.Plain(arg) {
		return arg, nil
	}
	path, err := runFile(arg, name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", errors.New("no file " + arg + " and no " + what + " of a run " + arg + " in " + filepath.Dir(filepath.Dir(path)))
	}
	return path, nil
}
