package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/transcript"
)

// `specloop chat` is a line-based session over `specloop run`: each line a
// person types is a run, the first with the task, each next one a
// follow-up that continues the run before it (run --continue), so the
// session is one conversation whose runs, transcripts and requests are
// those of `specloop run`, and `specloop chat --continue RUN_ID` (or
// `run --continue`) picks it up again later.

// chatHelp says what chat reads as its own.
const chatHelp = "/diff shows the last turn's patch, /show what the conversation said and did, /exit (or Ctrl-D) ends the session; Ctrl-C stops the turn in progress"

func chatCmd(ctx context.Context, env *cli.Env, args []string) int {
	var f runFlags
	fs, args, rest, code, done := parseRunFlags(env, "chat", "(--script FILE | --model PROVIDER:NAME) [run flags] [--continue RUN_ID]",
		"Opens a session on the workspace: type a task, watch the steps and the model's text as they come,\n"+
			"approve calls when asked (--approval), then type a follow-up; each line is a run of `specloop run`\n"+
			"that continues the one before it (a conversation; `specloop show RUN_ID` prints any of them).\n"+
			"--continue RUN_ID goes on with an earlier conversation. "+chatHelp+".\n"+
			"Takes the flags of `specloop run` (see `specloop help run`), but no prompt.", args, &f)
	if done {
		return code
	}
	// The files' settings went in front of the session's flags once; each
	// turn then reads no file.
	args = append(args, "--no-config")
	if rest != "" {
		return env.Fail(exitUsage, "chat: unexpected argument %q: type the task at the prompt", rest)
	}
	for _, bad := range []string{"prompt-file", "json", "resume", "remote"} {
		if isSet(fs, bad) {
			return env.Fail(exitUsage, "chat: --%s does not apply to a session", bad)
		}
	}
	if f.continueID == "" && f.model == "" && f.script == "" {
		return env.Fail(exitUsage, "chat: no model: give --model PROVIDER:NAME, or set model = \"PROVIDER:NAME\" in your configuration file (see `specloop help config`)")
	}
	if f.continueID == "" {
		if err := f.validate(fs); err != nil {
			return env.Fail(exitUsage, "chat: %v", err)
		}
	}
	last := f.continueID
	// One goroutine reads the person's lines, for the prompt and for the
	// approval questions of a turn alike (a read cannot be cancelled).
	lines := readLines(env.Stdin, 0)

	// Ctrl-C stops the turn in progress, not the session (the session's
	// own context ends with SIGTERM only).
	session, endSession := context.WithCancel(context.WithoutCancel(ctx))
	defer endSession()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer func() { signal.Stop(sigs); close(sigs) }() // ends the goroutine below
	stopTurn := make(chan context.CancelFunc, 1)
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM {
				endSession()
			}
			select {
			case cancel := <-stopTurn:
				cancel()
			default:
				if s == os.Interrupt {
					fmt.Fprintf(env.Stdout, "\n(%s)\n", "/exit or Ctrl-D ends the session")
				}
			}
		}
	}()

	fmt.Fprintf(env.Stdout, "specloop chat: %s.\n", chatHelp)
	var runs []string // the session's runs, oldest first
	for {
		fmt.Fprint(env.Stdout, "› ")
		l, ok := <-lines
		if !ok || l.err != nil {
			fmt.Fprintln(env.Stdout)
			return exitOK
		}
		line := strings.TrimSpace(l.line)
		switch {
		case session.Err() != nil:
			return exitCancelled
		case line == "":
			continue
		case line == "/exit":
			return exitOK
		case line == "/diff":
			chatDiff(env, last)
			continue
		case line == "/show":
			chatShow(env, runs, last)
			continue
		case strings.HasPrefix(line, "/"):
			env.Errorf("chat: %s is not a command: %s", strings.Fields(line)[0], chatHelp)
			continue
		}
		turnArgs := slices.Clone(args)
		if last != "" { // after the session's flags: the last --continue wins
			turnArgs = append(turnArgs, "--continue", last)
		}
		turnArgs = append(turnArgs, "--", line)
		turn, cancel := context.WithCancel(session)
		stopTurn <- cancel
		out := outcome{Lines: lines}
		runOnce(turn, env, turnArgs, &out)
		select { // the turn is over: Ctrl-C no longer stops it
		case <-stopTurn:
		default:
		}
		cancel()
		if out.ID != "" {
			last = out.ID
			runs = append(runs, out.ID)
		}
	}
}

// isSet reports whether the command line set flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// chatLog reads run id's transcript from the state directory.
func chatLog(id string) (*transcript.Log, error) {
	path, err := runFile(id, transcript.FileName)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return transcript.Read(f)
}

// chatDiff prints the patch the last turn's run left.
func chatDiff(env *cli.Env, last string) {
	if last == "" {
		fmt.Fprintln(env.Stdout, "no turn yet")
		return
	}
	log, err := chatLog(last)
	if err != nil {
		env.Errorf("chat: /diff: %v", err)
		return
	}
	for _, e := range slices.Backward(log.Entries) {
		if e.Result != nil {
			if p := e.Result.Patch; p != nil && *p != "" {
				io.WriteString(runText(env).Stdout, *p)
				return
			}
			break
		}
	}
	fmt.Fprintln(env.Stdout, "the last turn changed nothing")
}

// chatShow prints what the session's runs said and did (the run it
// continued from, for a session that began with --continue).
func chatShow(env *cli.Env, runs []string, last string) {
	if len(runs) == 0 && last != "" {
		runs = []string{last}
	}
	if len(runs) == 0 {
		fmt.Fprintln(env.Stdout, "no turn yet")
		return
	}
	for _, id := range runs {
		log, err := chatLog(id)
		if err == nil {
			err = transcript.Render(runText(env).Stdout, log)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			env.Errorf("chat: /show %s: %v", id, err)
		}
	}
}
