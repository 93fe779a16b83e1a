package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
	"github.com/specloop/specloop/wiring"
)

// runFlags are the flags of `specloop run`.
type runFlags struct {
	script       string
	promptFile   string
	maxSteps     int
	tracePath    string
	patchPath    string
	telemetry    cli.TelemetryFlags // see telemetry.go
	syncPolicy   string
	sync         trace.SyncPolicy // --sync, parsed (validate)
	asJSON       bool
	workspace    string
	noCommands   bool
	check        string
	recordRaw    bool
	noTranscript bool
	noWait       bool
	approval     approvalFlags // see approve.go
	// model selection (see models.go) and remote runs (see remote.go)
	model         string
	baseURL       string
	contextWindow int
	systemFile    string
	tokenBudget   int64
	obsBytes      int
	obsLines      int
	remote        string
	tokenFile     string
	sandbox       cli.SandboxFlags
	mcp           cli.MCPFlags
	toolsSpec     cli.ToolsSpecFlags
	continueID    string // see conversation.go
	resume        string // see resume.go
	profile       string // see config.go
	noConfig      bool
	noTokenLimit  bool // --token-budget 0 (see validate)
	noDocs        bool
	docsLimit     int
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.script, "script", "", "a file of raw model responses, one per line, replayed in order through the JSON action adapter (each line an Action or a Turn of several)")
	fs.StringVar(&f.promptFile, "prompt-file", "", "read the task from this file (- for standard input) instead of the PROMPT argument")
	fs.IntVar(&f.maxSteps, "max-steps", 0, fmt.Sprintf("the step budget: model calls, including ones that produced invalid output (default: %d for a provider model, %d for --script)", gen.ProviderDefaultCreateRunRequestMaxSteps, agent.DefaultMaxSteps))
	fs.StringVar(&f.tracePath, "trace", "", "append the run's JSONL trace to this file, outside the workspace (default: "+cli.StateDirUsage("runs/RUN_ID/trace.jsonl")+")")
	fs.StringVar(&f.patchPath, "patch", "", "write the run's patch (a unified diff, empty when nothing changed) to this file, made 0600; not inside the workspace")
	fs.StringVar(&f.syncPolicy, "sync", "end", "when the trace is fsynced: none, end (after run_finished) or every (each event)")
	f.telemetry.Register(fs, false)
	fs.BoolVar(&f.asJSON, "json", false, "print only the RunResult as JSON")
	fs.StringVar(&f.workspace, "workspace", ".", "the directory the file tools and commands are confined to (with --remote: a directory under the server's workspace root)")
	fs.BoolVar(&f.noCommands, "no-commands", false, "do not offer run_command to the model")
	fs.StringVar(&f.check, "check", "", "a completion check command run in the workspace when the model finishes; the run finishes only when it exits 0")
	f.approval.register(fs)
	fs.BoolVar(&f.noTranscript, "no-transcript", false, "keep no transcript of the run (by default it goes to "+cli.StateDirUsage("runs/RUN_ID")+": what the run said and did, redacted of secrets; specloop show RUN_ID prints it)")
	fs.BoolVar(&f.noWait, "no-wait", false, "fail at once when another specloop run uses the workspace, instead of waiting for it")
	fs.BoolVar(&f.recordRaw, "record-raw", false, "record the model's raw output in the trace (for replay); off by default because it stores raw text")
	fs.StringVar(&f.model, "model", "", "the model: openai:MODEL, anthropic:MODEL, replay:RUN_ID|FILE (a recorded run again, from its transcript; nothing is executed) or verify:TRACE_FILE (a trace recorded with --record-raw, its tools executed again and compared) (instead of --script)")
	fs.StringVar(&f.baseURL, "base-url", "", "the provider's base URL (e.g. a local OpenAI-compatible server); default from OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's")
	fs.IntVar(&f.contextWindow, "context-window", 0, "the model's context window in tokens (0: the default for the model's family, see README; else at least 1024)")
	fs.StringVar(&f.systemFile, "system-file", "", cli.SystemFileUsage)
	fs.Int64Var(&f.tokenBudget, "token-budget", 0, fmt.Sprintf("end the run once the model calls used more tokens than this (0: no limit; unset: %d for a provider model, none for --script)", gen.ProviderDefaultCreateRunRequestTokenBudget))
	fs.IntVar(&f.obsBytes, "max-observation-bytes", agent.DefaultMaxObservationBytes, "the most bytes of a tool's output the model sees; longer output keeps its head and tail around a marker (the trace and --json keep the model's view, the progress display the whole)")
	fs.IntVar(&f.obsLines, "max-observation-lines", agent.DefaultMaxObservationLines, "the most lines of a tool's output the model sees, cut like --max-observation-bytes")
	fs.BoolVar(&f.noDocs, "no-project-docs", false, "read no AGENTS.md: neither yours ($XDG_CONFIG_HOME/specloop/AGENTS.md, or ~/.config/specloop/AGENTS.md) nor the repository's (AGENTS.override.md or AGENTS.md in each directory from its root down to the workspace)")
	fs.IntVar(&f.docsLimit, "project-docs-limit", gen.DefaultCreateRunRequestProjectDocsLimit, "the most bytes of AGENTS.md the model gets; over it the files farthest from the workspace are left out first")
	fs.StringVar(&f.remote, "remote", "", "run on a specloop server at this base URL instead of locally")
	fs.StringVar(&f.tokenFile, "token-file", "", "with --remote: a file holding the server's bearer token (default: $SPECLOOP_TOKEN)")
	f.sandbox.Register(fs)
	f.mcp.Register(fs, "an MCP server whose tools the model may call as NAME__tool: NAME=COMMAND (stdio; split like a shell would, without one; runs unsandboxed, as you, with none of specloop's environment but what --mcp-env lists) or NAME=URL (streamable HTTP); repeatable. With --remote: the NAME of a server the remote server configured")
	f.toolsSpec.Register(fs)
	fs.StringVar(&f.continueID, "continue", "", "continue run RUN_ID, which ended, with PROMPT as your message: the next turn of its conversation, with the history it ended with, its flags (those given now replace the recorded ones of the same name) and a fresh step budget")
	fs.StringVar(&f.profile, "profile", "", "apply the configuration files' [profiles.NAME] table over their top-level settings (see: specloop help config)")
	fs.BoolVar(&f.noConfig, "no-config", false, "read no configuration file: only the flags given and the defaults")
	fs.StringVar(&f.resume, "resume", "", "go on with RUN_ID, a run of specloop run killed mid-run, from its transcript: with its own flags and task (give no others), after its last complete step")
}

// check refuses flag values that make no sense; the error names the flag.
func (f *runFlags) validate(fs *flag.FlagSet) error {
	if f.maxSteps < 1 && isSet(fs, "max-steps") {
		return fmt.Errorf("--max-steps must be at least 1 (left out: %d for a provider model, %d for --script)", gen.ProviderDefaultCreateRunRequestMaxSteps, agent.DefaultMaxSteps)
	}
	// --token-budget 0 is no limit; left out, the model's default.
	f.noTokenLimit = f.tokenBudget == 0 && isSet(fs, "token-budget")
	if f.tokenBudget < 0 {
		return errors.New("--token-budget must not be negative (0 means no limit)")
	}
	// The bounds of the API's context_window, so that a local run and a
	// --remote one accept the same values.
	if lo, hi := gen.MinOpenAIModelConfigContextWindow, gen.MaxOpenAIModelConfigContextWindow; f.contextWindow != 0 && (f.contextWindow < lo || f.contextWindow > hi) {
		return fmt.Errorf("--context-window must be 0 (the model family's default) or between %d and %d", lo, hi)
	}
	for _, c := range []struct {
		flag   string
		v      int
		lo, hi int
	}{
		{"--max-observation-bytes", f.obsBytes, gen.MinCreateRunRequestMaxObservationBytes, gen.MaxCreateRunRequestMaxObservationBytes},
		{"--max-observation-lines", f.obsLines, gen.MinCreateRunRequestMaxObservationLines, gen.MaxCreateRunRequestMaxObservationLines},
		{"--project-docs-limit", f.docsLimit, gen.MinCreateRunRequestProjectDocsLimit, gen.MaxCreateRunRequestProjectDocsLimit},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s must be between %d and %d", c.flag, c.lo, c.hi)
		}
	}
	// A remote run that continues another keeps its model unless one is
	// given.
	if (f.script == "") == (f.model == "") && (f.script != "" || f.remote == "" || f.continueID == "") {
		return errors.New("give exactly one of --script FILE and --model PROVIDER:NAME")
	}
	if f.remote != "" && len(f.toolsSpec) > 0 {
		return errors.New("--tools-spec applies to local runs; a server takes its own (specloop serve --tools-spec)")
	}
	var err error
	if f.sync, err = trace.ParseSyncPolicy(f.syncPolicy); err != nil {
		return fmt.Errorf("--sync: %w", err)
	}
	return nil
}

func runCmd(ctx context.Context, env *cli.Env, args []string) int {
	return runOnce(ctx, env, args, nil)
}

// outcome is what a local run that started leaves for its caller (chat):
// its id and result. Lines, when set, is where the run's approval
// questions read their answers (the session's input); Spec, when set,
// changes the run's spec before it opens (acp: its observer and approver).
type outcome struct {
	Lines  chan lineOrErr
	Spec   func(*runner.Spec)
	ID     string
	Result gen.RunResult
}

// runOnce is `specloop run args`; a run that starts locally fills out.
func runOnce(ctx context.Context, env *cli.Env, args []string, out *outcome) int {
	env = runText(env)
	var lines chan lineOrErr
	if out != nil {
		lines = out.Lines
	}
	var f runFlags
	fs, args, prompt, code, done := parseRunFlags(env, "run", "(--script FILE | --model PROVIDER:NAME) [flags] (PROMPT | --prompt-file FILE)",
		"Runs an agent on PROMPT (or on the text of --prompt-file FILE; - reads standard input). Prints each\n"+
			"step as it happens and the result, or with --json only the RunResult. The exit status tells how\n"+
			"the run ended (see `specloop help`). On a terminal or a pipe, control characters in what the run\n"+
			"produced (escape sequences, a carriage return mid-line) are shown as escapes like \\x1b; written\n"+
			"to a file, the patch, the answer and the error are exact, and --json always is. Flags a person\n"+
			"sets once go in a configuration file (see `specloop help config`).", args, &f)
	if done {
		return code
	}
	var resumed *runRequest
	if f.resume != "" {
		rq, err := resumeFlags(fs, &f, prompt)
		if err != nil {
			return env.Fail(exitUsage, "run: %v", err)
		}
		resumed, args, prompt = rq, rq.Args, rq.Prompt
	}
	prompt, err := readPrompt(env, f.promptFile, prompt)
	if errors.Is(err, errNoPrompt) && strings.HasPrefix(f.model, replayProvider+":") {
		err = nil // the recorded run's task
	}
	if err != nil {
		return cli.Usagef(fs, "%v", err)
	}
	// A run that continues another (or is resumed, having continued one)
	// starts from the conversation's history.
	var conv []runner.Turn
	continues, by := f.continueID, "--continue"
	if resumed != nil {
		continues, by = resumed.Continues, "--resume"
	}
	if continues != "" && f.remote == "" {
		var last *runRequest
		conv, last, err = conversation(continues)
		if err == nil && resumed == nil {
			now, _ := runFlagsSet(new(runFlags), args, workingDir())
			args, err = continueFlags(&f, last, now)
		}
		if err != nil {
			return env.Fail(exitUsage, "run: %s: %v", by, err)
		}
	}
	if err := f.validate(fs); err != nil {
		return cli.Usagef(fs, "%v", err)
	}
	if f.patchPath != "" && f.remote == "" && errors.Is(wiring.CheckRecordsDir(f.patchPath, f.workspace), wiring.ErrRecordsInWorkspace) {
		return cli.Usagef(fs, "--patch %s is inside the workspace: the run could change it, and the next run's patch would hold it; give a path outside %s", f.patchPath, f.workspace)
	}
	if f.remote != "" {
		return runRemote(ctx, env, &f, prompt, fs)
	}
	tr, err := f.telemetry.Open(ctx, false)
	if err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	defer closeAfterRun(ctx, env, tr)
	asker, err := f.approval.open(env, lines)
	if err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	// The model is built before anything is opened or started (MCP
	// servers may take a while): its flags are checked first. The tools
	// come with each request.
	m, err := openModel(&f)
	if err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	if rp, ok := m.(transcriptReplay); ok && prompt == "" {
		prompt = rp.r.Task()
	}
	host, err := f.host(tr)
	if err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	// The run names every server of --mcp.
	var mcpNames []string
	for _, s := range host.MCPServers {
		mcpNames = append(mcpNames, s.Name)
	}
	req := f.request(prompt, mcpNames)
	host.MCP = f.mcp.Config(env.Stderr)
	host.Waiting = func(holder string) {
		fmt.Fprintf(env.Stderr, "another run uses this workspace (%s); waiting… (--no-wait to fail)\n", oneLine(holder, 120))
	}
	sp := &runner.Spec{CreateRunRequest: req, ID: agent.NewRunID(), RecordRaw: f.recordRaw, ApprovalTimeout: f.approval.timeout}
	host.Dir = f.workspace
	if resumed != nil {
		sp.ID = resumed.ID
	}
	transcriptPath := ""
	var resumeLog *transcript.Log
	if sp.KeepsTranscript() {
		if transcriptPath, err = runFile(sp.ID, transcript.FileName); err != nil {
			return env.Fail(exitUsage, "run: the transcript: %v (--no-transcript keeps none)", err)
		}
		host.TranscriptPath = transcriptPath
		if resumed != nil {
			if resumeLog, _, err = transcript.Resume(transcriptPath); err != nil {
				return env.Fail(exitUsage, "run: --resume %s: %v (specloop show %s prints what it did)", sp.ID, err, sp.ID)
			}
		}
	}
	if host.TracePath, err = runTracePath(f.tracePath, f.workspace, sp.ID); err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	if conv != nil {
		sp.FollowUp, sp.Conversation = &agent.FollowUp{Message: prompt}, conv
	}
	if asker != nil {
		sp.Approver = asker
	}
	if !f.asJSON {
		p := &progressPrinter{w: env.Stdout, clock: realClock(env.Stdout)}
		sp.Observer, sp.Live = p.observe, p.live
	}
	if out != nil && out.Spec != nil {
		out.Spec(sp)
	}
	setup, code := openSetup(ctx, env, "run", sp, host, true)
	if setup == nil {
		return code
	}
	defer setup.Close()
	// Beside the transcript, once Open found its place outside the
	// workspace: what --resume and --continue need.
	if transcriptPath != "" && resumed == nil {
		if err := keepRunRequest(transcriptPath, &runRequest{ID: sp.ID, Dir: workingDir(), Args: args, Prompt: prompt, Continues: continues}); err != nil {
			return env.Fail(exitUsage, "run: the transcript: %v (--no-transcript keeps none)", err)
		}
	}
	if rp, ok := m.(transcriptReplay); ok {
		rp.wire(&setup.Options)
	}
	if resumeLog != nil {
		st, err := transcript.State(ctx, resumeLog, sp.Task, m, setup.Options)
		if err != nil {
			return env.Fail(exitInternal, "run: --resume %s: %v", sp.ID, err)
		}
		setup.Options.Resume = st
		// A scripted model goes on past the responses the run took.
		if sk, ok := m.(interface{ Skip(int) }); ok {
			sk.Skip(st.StepsUsed)
		}
	}
	res, runErr := agent.Run(ctx, sp.Task, m, setup.Options)
	if out != nil {
		out.ID, out.Result = sp.ID, res
	}
	if err := setup.Close(); err != nil { // the transcript's writes among it
		env.Errorf("run: %v", err)
	}
	shownTrace := f.tracePath
	if shownTrace == "" {
		shownTrace = "specloop trace show " + sp.ID
	}
	code = writePatch(env, f.patchPath, &res, report(env, &res, runErr, f.asJSON, shownTrace))
	if !f.asJSON && transcriptPath != "" {
		fmt.Fprintf(env.Stdout, "transcript: specloop show %s\n", sp.ID)
	}
	return code
}

// runTracePath is where a local run's trace goes: path, which must lie
// outside the workspace (the model would list and read it, and the run's
// patch would hold it), or by default trace.jsonl beside the run's
// transcript in the user's state directory.
func runTracePath(path, workspace, id string) (string, error) {
	given := path != ""
	if !given {
		var err error
		if path, err = runFile(id, traceFile); err != nil {
			return "", fmt.Errorf("the trace: %w (give --trace FILE)", err)
		}
	}
	err := wiring.CheckRecordsDir(path, workspace)
	switch {
	case errors.Is(err, wiring.ErrRecordsInWorkspace) && given:
		return "", fmt.Errorf("--trace %s is inside the workspace: the model would see it and the patch would hold it; give a path outside it, or leave --trace out for %s", path, cli.StateDirUsage("runs/RUN_ID/trace.jsonl"))
	case errors.Is(err, wiring.ErrRecordsInWorkspace):
		return "", fmt.Errorf("the run's records would go to %s, inside the workspace (the state directory is in it): set $%s outside it, or give --trace FILE outside it and --no-transcript", filepath.Dir(path), cli.StateHomeEnv)
	case err != nil:
		return "", fmt.Errorf("--trace: %w", err)
	case !given:
		err = os.MkdirAll(filepath.Dir(path), 0o700)
	}
	return path, err
}

// runFile is where `specloop run` keeps the record name (its transcript,
// trace or request) of run id: in the run's directory in the state
// directory.
func runFile(id, name string) (string, error) {
	dir, err := cli.StateDir("runs")
	return filepath.Join(dir, id, name), err
}

// report prints a run's result and returns the exit status for it: as
// JSON exactly as encoding/json writes it (which escapes C0 controls, ESC
// among them, but leaves C1 controls and bidi overrides as they are), or
// for a person, through env's sanitiser on a terminal (see runText).
func report(env *cli.Env, res *gen.RunResult, runErr error, asJSON bool, tracePath string) int {
	if asJSON {
		if err := writeJSON(termsafe.Exact(env.Stdout), res, "  "); err != nil {
			return env.Fail(exitInternal, "%v", err)
		}
	} else {
		printResult(env.Stdout, res, tracePath)
	}
	// The error the result carries is printed with it (or in the JSON).
	if runErr != nil && (res.Error == nil || *res.Error != runErr.Error()) {
		env.Errorf("%v", runErr)
	}
	return exitCodeFor(res.ExitReason)
}

// writePatch writes the patch of res to path (--patch), made 0600, and
// returns code, the run's exit status, or exitInternal when the patch
// could not be written.
func writePatch(env *cli.Env, path string, res *gen.RunResult, code int) int {
	if path == "" {
		return code
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && st.Mode().IsRegular() {
			err = f.Chmod(0o600) // a file that existed keeps no wider mode
		}
		_, werr := io.WriteString(f, deref(res.Patch))
		err = errors.Join(err, werr, f.Close())
	}
	if err != nil {
		return env.Fail(max(code, exitInternal), "run: --patch: %v", err)
	}
	return code
}

// readScriptLines reads the raw model responses of a script file, one per
// line, empty lines skipped.
func readScriptLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s holds no responses", path)
	}
	return lines, nil
}

// parseRunFlags parses args into f, the flags of `specloop run` for
// command name (whose help the flag set prints), after the settings of the
// configuration files (runConfig), which go in front of them: it returns
// the flag set, the arguments with the files' first and the positional
// argument; done reports that the command must return code.
func parseRunFlags(env *cli.Env, name, synopsis, about string, args []string, f *runFlags) (fs *flag.FlagSet, all []string, positional string, code int, done bool) {
	parse := func() {
		*f = runFlags{}
		fs = env.FlagSet(name, synopsis, about)
		f.register(fs)
		positional, code, done = parseWithPositional(fs, args)
	}
	if parse(); done {
		return
	}
	cfg, err := runConfig(fs, f)
	if err != nil {
		env.Errorf("%s: %v", name, err)
		return fs, args, "", exitUsage, true
	}
	printConfigured(env, cfg, f.asJSON)
	if len(cfg.settings) > 0 {
		args = append(cfg.args(), args...)
		parse()
	}
	return fs, args, positional, code, done
}

// parseWithPositional parses the flags and at most one positional
// argument, before, between or after them (cli.ParseFlags).
func parseWithPositional(fs *flag.FlagSet, args []string) (positional string, code int, done bool) {
	if code, done := cli.ParseFlags(fs, args); done {
		return "", code, true
	}
	if fs.NArg() > 1 {
		return "", cli.Usagef(fs, "expected one PROMPT argument, got %d (quote the prompt)", fs.NArg()), true
	}
	return fs.Arg(0), 0, false
}

// errNoPrompt is the usage error of a run without a task.
var errNoPrompt = errors.New("the task PROMPT is required (or --prompt-file FILE)")

// maxPromptChars is the longest prompt the spec's Task allows, in
// characters.
const maxPromptChars = gen.MaxLengthTaskPrompt

// readPrompt returns the task: the PROMPT argument, or the text of
// --prompt-file (standard input for "-"), which avoids the shell's limit on
// argument length. Exactly one of the two must be given, and the prompt
// must fit the spec's limit.
func readPrompt(env *cli.Env, file, arg string) (string, error) {
	if file == "" {
		if arg == "" {
			return "", errNoPrompt
		}
		if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
			env.Errorf("run: the task is the text %q, which is also a file's name; --prompt-file %s makes its contents the task", arg, arg)
		}
		return arg, nil
	}
	if arg != "" {
		return "", errors.New("give the task as PROMPT or with --prompt-file, not both")
	}
	r := env.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	// A character is at most 4 bytes: read no more than the longest
	// prompt allowed could take, plus one byte to notice a longer one.
	limit := int64(maxPromptChars)*utf8.UTFMax + 1
	data, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return "", fmt.Errorf("--prompt-file: %w", err)
	}
	switch {
	case int64(len(data)) == limit || utf8.RuneCount(data) > maxPromptChars:
		return "", fmt.Errorf("--prompt-file: the prompt is longer than %d characters", maxPromptChars)
	case !utf8.Valid(data):
		return "", errors.New("--prompt-file: the prompt is not valid UTF-8")
	case len(bytes.TrimSpace(data)) == 0:
		return "", errors.New("--prompt-file: the prompt is empty")
	}
	return string(data), nil
}

// request maps the run flags to the API's request for the run: a local
// run and a --remote one make the same request, so a flag means what its
// field means (a local run becomes a runner.Spec of it, a remote one is
// sent as it is). mcp names its MCP servers (a local run's --mcp define
// them, a remote one's name the server's). A policy of --approval but
// never has someone decide (approvalFlags.open). The model is not in it:
// a local run builds its own, a remote one names it (see models.go).
func (f *runFlags) request(prompt string, mcp []string) gen.CreateRunRequest {
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: prompt}}
	if f.maxSteps > 0 {
		req.MaxSteps = &f.maxSteps
	}
	if f.noTranscript {
		req.Transcript = new(bool) // false
	}
	switch {
	case f.tokenBudget > 0:
		req.TokenBudget = &f.tokenBudget
	case f.noTokenLimit: // the most the spec allows
		req.TokenBudget = new(int64(gen.MaxCreateRunRequestTokenBudget))
	}
	req.MaxObservationBytes, req.MaxObservationLines = &f.obsBytes, &f.obsLines
	if f.noDocs {
		req.ProjectDocs = new(bool) // false
	}
	if f.docsLimit != gen.DefaultCreateRunRequestProjectDocsLimit {
		req.ProjectDocsLimit = &f.docsLimit
	}
	if f.check != "" {
		req.Check = &f.check
	}
	if len(mcp) > 0 {
		req.McpServers = &mcp
	}
	if ws := strings.TrimSpace(f.workspace); ws != "" && ws != "." {
		req.Workspace = &ws
	}
	if policy := gen.ApprovalPolicy(f.approval.policy); policy != gen.ApprovalPolicyNever {
		req.ApprovalPolicy = &policy
		if t := f.approval.timeout; t != agent.DefaultApprovalTimeout {
			req.ApprovalTimeoutSeconds = new(int(min(max(t.Round(time.Second), time.Second), 7*24*time.Hour) / time.Second))
		}
	}
	return req
}

// host maps the flags that say where and how a local run works (not what
// it does: that is its request) to its host's setup; tr is the telemetry
// the run opened.
func (f *runFlags) host(tr *cli.Telemetry) (wiring.Config, error) {
	sb, err := f.sandbox.Policy()
	if err != nil {
		return wiring.Config{}, err
	}
	servers, err := f.mcp.Servers()
	if err != nil {
		return wiring.Config{}, err
	}
	specs, err := f.toolsSpec.Load()
	if err != nil {
		return wiring.Config{}, err
	}
	locks, err := cli.StateDir("locks")
	if err != nil {
		return wiring.Config{}, fmt.Errorf("the workspace lock's directory: %w", err)
	}
	return wiring.Config{
		// Two runs never edit one directory at once, whichever processes
		// they are in.
		LockDir:         locks,
		NoWait:          f.noWait,
		MCPServers:      servers,
		Tools:           specs,
		DisableCommands: f.noCommands,
		Sandbox:         sb,
		TraceSync:       f.sync,
		Telemetry:       tr.Tel,
		TelemetryRun:    runInfo(f),
	}, nil
}

// openSetup opens a local run's setup for command name: run sp on host
// cfg (runner.Open), or with sp nil the tools of cfg alone (wiring.Open).
// On failure it reports the error, naming the flag at fault, and returns
// nil and the exit status: a usage error for a workspace the user named
// (userWorkspace), a sandbox this machine cannot provide or a trace file
// that cannot be written. It prints the warning of an unconfined sandbox.
func openSetup(ctx context.Context, env *cli.Env, name string, sp *runner.Spec, cfg wiring.Config, userWorkspace bool) (*wiring.Setup, int) {
	var setup *wiring.Setup
	var err error
	if sp != nil {
		setup, err = runner.Open(ctx, sp, cfg)
	} else {
		setup, err = wiring.OpenContext(ctx, cfg)
	}
	var we *wiring.Error
	switch {
	case err == nil:
	case errors.As(err, &we) && errors.Is(we.Err, wiring.ErrWorkspaceBusy):
		env.Errorf("%s: %v (without --no-wait the run waits for it)", name, we.Err)
		return nil, exitInternal
	case ctx.Err() != nil && errors.As(err, &we) && we.Part == wiring.PartWorkspace:
		env.Errorf("%s: stopped while waiting for the workspace", name)
		return nil, exitInterrupted
	case errors.As(err, &we) && we.Part == wiring.PartWorkspace && userWorkspace:
		env.Errorf("%s: --workspace: %v", name, we.Err)
		return nil, exitUsage
	case errors.As(err, &we) && we.Part == wiring.PartSandbox:
		env.Errorf("%s: %v", name, we.Err)
		return nil, exitUsage
	case errors.As(err, &we) && we.Part == wiring.PartTrace:
		env.Errorf("%s: --trace: %v", name, we.Err)
		return nil, exitUsage
	case errors.As(err, &we) && we.Part == wiring.PartTranscript:
		env.Errorf("%s: the transcript: %v (--no-transcript keeps none)", name, we.Err)
		return nil, exitUsage
	case errors.As(err, &we) && we.Part == wiring.PartMCP:
		env.Errorf("%s: --mcp: %v", name, we.Err)
		return nil, exitUsage
	case errors.As(err, new(*runner.Error)): // a server it names that --mcp does not give
		env.Errorf("%s: --mcp: %v", name, err)
		return nil, exitUsage
	case errors.As(err, &we) && we.Part == wiring.PartTools && len(cfg.Tools) > 0:
		env.Errorf("%s: --tools-spec: %v", name, we.Err)
		return nil, exitUsage
	case errors.As(err, &we):
		env.Errorf("%s: %v", name, we.Err)
		return nil, exitInternal
	default:
		env.Errorf("%s: %v", name, err)
		return nil, exitInternal
	}
	if setup.Sandbox != nil {
		if w := setup.Sandbox.Warning(); w != "" {
			fmt.Fprintln(env.Stderr, "specloop: "+w)
		}
	}
	return setup, 0
}

// workingDir is the directory relative paths of the flags are taken from.
func workingDir() string {
	dir, _ := os.Getwd()
	return dir
}
