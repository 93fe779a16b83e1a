package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/specloop/specloop/acp"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/buildinfo"
	"github.com/specloop/specloop/internal/gitshape"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/transcript"
	"github.com/specloop/specloop/wiring"
)

// acpAbout is `specloop help acp`: what it is and how an editor starts it.
const acpAbout = "Serves specloop to an editor over the Agent Client Protocol on standard input and output (logs on\n" +
	"standard error). Each session is a conversation in the editor's project directory: its first prompt\n" +
	"a run of `specloop run --workspace DIR`, each next one a follow-up that continues it, with your\n" +
	"configuration files (the model among them: see `specloop help config`), the repository's file and\n" +
	"AGENTS.md, the sandbox and the check. --approval asks in the editor (allow once, allow always for the\n" +
	"tool in this session, reject); --workspace DIR, when given, is the directory sessions must lie in.\n" +
	"Takes the flags of `specloop run` (see `specloop help run`), but no prompt.\n\n" +
	"Zed (settings.json):\n" +
	"  \"agent_servers\": {\"specloop\": {\"type\": \"custom\", \"command\": \"specloop\", \"args\": [\"acp\", \"--approval\", \"writes\"]}}\n" +
	"JetBrains (~/.jetbrains/acp.json): the same command and args under \"agent_servers\". Neovim: CodeCompanion's or\n" +
	"avante.nvim's ACP adapter with command specloop and args acp. See docs/editor.md."

func acpCmd(ctx context.Context, env *cli.Env, args []string) int {
	fs := env.FlagSet("acp", "[--model PROVIDER:NAME] [run flags]", acpAbout)
	var f runFlags
	f.register(fs)
	rest, code, done := parseWithPositional(fs, args)
	if done {
		return code
	}
	if rest != "" {
		return env.Fail(exitUsage, "acp: unexpected argument %q: the editor sends the prompts", rest)
	}
	for _, bad := range []string{"prompt-file", "json", "resume", "remote", "continue"} {
		if isSet(fs, bad) {
			return env.Fail(exitUsage, "acp: --%s does not apply to an editor's sessions", bad)
		}
	}
	h := &acpHost{env: env, args: args}
	if isSet(fs, "workspace") {
		root, err := filepath.Abs(f.workspace)
		if err != nil {
			return env.Fail(exitUsage, "acp: --workspace: %v", err)
		}
		h.root = root
	}
	sessions, err := cli.StateDir("acp")
	if err != nil {
		return env.Fail(exitInternal, "acp: the sessions' directory: %v", err)
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	if err := acp.Serve(ctx, acp.Config{Host: h, SessionDir: sessions, Version: buildinfo.Version(), Logger: log}, env.Stdin, env.Stdout); err != nil && ctx.Err() == nil {
		return env.Fail(exitInternal, "acp: %v", err)
	}
	return exitOK
}

// acpHost runs an editor's turns as `specloop run` with acp's flags.
type acpHost struct {
	env  *cli.Env
	args []string // acp's flags, every turn's
	root string   // where sessions must lie; "" for anywhere
}

// Workspace refuses what --workspace would: a directory that is not one,
// or that holds the runs' records; and one outside acp's --workspace.
func (h *acpHost) Workspace(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("%q is not an absolute path", cwd)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", cwd)
	}
	if _, ok := gitshape.Within(h.root, filepath.Clean(cwd)); h.root != "" && !ok {
		return fmt.Errorf("%s is outside %s, the directory specloop acp --workspace allows", cwd, h.root)
	}
	state, err := cli.StateDir("")
	if err == nil {
		err = wiring.CheckRecordsDir(state, cwd)
	}
	if errors.Is(err, wiring.ErrRecordsInWorkspace) {
		return fmt.Errorf("%s holds specloop's state directory %s, which its runs must not reach (set $%s elsewhere)", cwd, state, cli.StateHomeEnv)
	}
	return err
}

// Turn runs t as `specloop run --workspace CWD [--continue LAST] -- PROMPT`
// with acp's flags and the session's MCP servers; what the run prints
// goes to standard error, its errors to t.Stderr too.
func (h *acpHost) Turn(ctx context.Context, t acp.Turn) (string, gen.RunResult, error) {
	args := append(slices.Clone(h.args), "--workspace", t.Cwd)
	for _, s := range t.MCP {
		v := s.URL
		for _, w := range s.Command {
			v += " '" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		args = append(args, "--mcp", s.Name+"="+strings.TrimSpace(v))
	}
	if t.Continues != "" {
		args = append(args, "--continue", t.Continues)
	}
	args = append(args, "--", t.Prompt)
	env := &cli.Env{Prog: h.env.Prog, Stdin: strings.NewReader(""), Stdout: h.env.Stderr, Stderr: io.MultiWriter(h.env.Stderr, t.Stderr)}
	out := outcome{Lines: make(chan lineOrErr), Spec: func(sp *runner.Spec) {
		sp.Observer, sp.Live = t.Observer, t.Live
		if sp.Approver != nil {
			sp.Approver = t.Approver
		}
	}}
	runOnce(ctx, env, args, &out)
	return out.ID, out.Result, nil
}

func (h *acpHost) Transcript(id string) (*transcript.Log, error) { return chatLog(id) }
