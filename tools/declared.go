package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/redirect"
	"github.com/specloop/specloop/sandbox"
)

// argvKey is the operation extension that declares a command handler: the
// argv of a program run in the workspace under the sandbox.
const argvKey = "x-specloop-argv"

// oldArgvKey is what argvKey was called. It is refused, naming argvKey: it
// means only the boolean trait of a built-in tool (runs commands).
const oldArgvKey = "x-specloop-command"

// Defaults of DeclaredConfig.
const (
	DefaultDeclaredTimeout   = 60 * time.Second
	DefaultDeclaredMaxOutput = 1 << 20
)

// DeclaredConfig configures the handlers a custom tool document declares.
// The zero value uses the defaults.
type DeclaredConfig struct {
	// Timeout bounds one call: a command is killed, a request cancelled;
	// zero means DefaultDeclaredTimeout.
	Timeout time.Duration
	// MaxOutput caps a command's standard output and an endpoint's
	// response body in bytes; more is a handler_failed error. Zero means
	// DefaultDeclaredMaxOutput.
	MaxOutput int
}

// RegisterDeclared binds every tool of s that has no handler yet to the
// handler its operation declares:
//
//   - x-specloop-argv: [program, args...] runs the program in the
//     workspace under the runtime's sandbox, exactly like run_command (no
//     network, a read-only .git, the allowlisted environment), with the
//     arguments' JSON on its standard input. A zero exit status with its
//     standard output is the result; the tool needs commands, so New
//     refuses it in a runtime that offers none.
//   - servers: [{url: ...}] (the operation's own servers) POSTs the
//     arguments' JSON to that URL followed by the operation's path; only
//     http and https, no server variables. A 2xx response's body is the
//     result. Redirects are followed only within the URL's scheme and
//     host, so the arguments never go to a host the document did not name.
//
// A result that is a JSON object is the structured result; other text is
// {"output": text}. It must validate against the tool's result schema
// when the document gives one. Every failure (an exit status, an HTTP
// status, the timeout, output over the cap) is a handler_failed error
// observation. A tool that declares neither handler or both, or declares
// one malformed, is refused here, naming the tool.
func (s *Spec) RegisterDeclared(cfg DeclaredConfig) error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultDeclaredTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultDeclaredMaxOutput
	}
	// Redirects are followed only within the endpoint's scheme and host.
	client := &http.Client{CheckRedirect: redirect.SameOrigin}
	for _, def := range s.reg.Defs() {
		if _, bound := s.bound[def.Spec.Name]; bound {
			continue
		}
		h, err := declaredHandler(def, cfg, client)
		if err != nil {
			return fmt.Errorf("tools: custom tool %q: %w", def.Spec.Name, err)
		}
		if err := s.bind(def, h); err != nil {
			return err
		}
		// The model is told the codes every declared handler may answer:
		// a command's also protected_path (see sandbox.GitError).
		codes := []gen.ErrorCode{gen.ErrorCodeHandlerFailed}
		if h.need == NeedsCommands {
			codes = append(codes, gen.ErrorCodeProtectedPath)
		}
		for _, code := range codes {
			if !slices.Contains(def.ErrorCodes, code) {
				def.ErrorCodes = append(def.ErrorCodes, code)
				def.Spec.ErrorDescription = errorDescription(def.ErrorCodes)
			}
		}
	}
	return nil
}

func declaredHandler(def *Def, cfg DeclaredConfig, client *http.Client) (Handler, error) {
	if _, old := def.op.Extensions[oldArgvKey]; old {
		return Handler{}, fmt.Errorf("declares %s, which is now %s: [program, args...] (%s is only the trait of a built-in tool)", oldArgvKey, argvKey, oldArgvKey)
	}
	raw, hasCommand := def.op.Extensions[argvKey]
	servers := def.op.Servers
	hasServer := len(servers) > 0
	switch {
	case hasCommand && hasServer:
		return Handler{}, fmt.Errorf("declares both %s and servers; keep one", argvKey)
	case hasCommand:
		argv, err := commandArgv(raw)
		if err != nil {
			return Handler{}, err
		}
		return rawHandler(NeedsCommands, func(ctx context.Context, env *Env, input []byte) (Result, error) {
			return runDeclared(ctx, env, def, argv, cfg, input)
		}), nil
	case hasServer:
		u, err := endpointURL(servers, toolPathPrefix+def.Spec.Name)
		if err != nil {
			return Handler{}, err
		}
		return rawHandler(NeedsNothing, func(ctx context.Context, _ *Env, input []byte) (Result, error) {
			return postDeclared(ctx, def, u, cfg, client, input)
		}), nil
	}
	return Handler{}, fmt.Errorf("has no handler: register a Go handler, or declare %s: [program, args...] or the operation's servers", argvKey)
}

func commandArgv(raw any) ([]string, error) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%s must be a non-empty list of strings (the program and its arguments)", argvKey)
	}
	argv := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok || i == 0 && strings.TrimSpace(s) == "" || strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%s[%d] must be a string (without NUL; the program not empty)", argvKey, i)
		}
		argv[i] = s
	}
	return argv, nil
}

func endpointURL(servers []string, path string) (string, error) {
	if len(servers) != 1 {
		return "", errors.New("servers must hold exactly one server, the tool's endpoint")
	}
	raw := servers[0]
	if strings.ContainsAny(raw, "{}") {
		return "", errors.New("the server's URL has variables, which custom tools do not support")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("the server's URL must be an absolute http or https URL without a query or fragment")
	}
	return u.JoinPath(path).String(), nil
}

// runDeclared runs the program argv a tool declares, the arguments' JSON
// input on its standard input.
func runDeclared(ctx context.Context, env *Env, def *Def, argv []string, cfg DeclaredConfig, input []byte) (Result, error) {
	if env.Sandbox == nil || env.Workspace == nil {
		return Result{}, Errorf(gen.ErrorCodeCommandsDisabled, "%s runs a command, and this runtime offers no commands", def.Spec.Name)
	}
	if err := env.Workspace.running(ctx); err != nil {
		return Result{}, err
	}
	stdout := newCapture(cfg.MaxOutput, 0)
	stderr := newCapture(1<<10, 1<<10)
	run, err := runCmd(ctx, env.Sandbox, env.Workspace, sandbox.Command{Args: argv, Stdin: bytes.NewReader(input), Stdout: stdout, Stderr: stderr, Timeout: cfg.Timeout})
	var se *sandbox.StartError
	switch {
	case errors.As(err, &se):
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the command of %s could not be started: %v", def.Spec.Name, se.Err)
	case err != nil:
		if msg, ok := gitGuardMessage(err); ok {
			return Result{}, Errorf(gen.ErrorCodeProtectedPath, "the command of %s: %s", def.Spec.Name, msg)
		}
		return Result{}, err
	case run.TimedOut:
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the command of %s timed out after %s and was killed", def.Spec.Name, cfg.Timeout)
	case stdout.omitted() > 0:
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the command of %s printed more than %s", def.Spec.Name, sizeText(cfg.MaxOutput))
	case run.ExitCode != 0:
		msg := fmt.Sprintf("the command of %s exited with status %d", def.Spec.Name, run.ExitCode)
		if text := strings.TrimSpace(stderr.text()); text != "" {
			msg += "; its standard error:\n" + text
		}
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "%s", msg)
	}
	return resultFor(def, stdout.head)
}

// postDeclared posts a tool's arguments, input, to its declared endpoint.
func postDeclared(ctx context.Context, def *Def, endpoint string, cfg DeclaredConfig, client *http.Client, input []byte) (Result, error) {
	tctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, endpoint, bytes.NewReader(input))
	if err != nil {
		return Result{}, fmt.Errorf("build the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if tctx.Err() != nil {
			return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the endpoint of %s did not answer within %s", def.Spec.Name, cfg.Timeout)
		}
		if errors.Is(err, redirect.ErrOtherOrigin) {
			return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the endpoint of %s redirected to another origin, which a declared endpoint may not; the request was not sent there", def.Spec.Name)
		}
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the endpoint of %s cannot be reached", def.Spec.Name)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the endpoint of %s answered HTTP %d", def.Spec.Name, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(cfg.MaxOutput)+1))
	switch {
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case err != nil:
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "reading the answer of the endpoint of %s failed", def.Spec.Name)
	case len(body) > cfg.MaxOutput:
		return Result{}, Errorf(gen.ErrorCodeHandlerFailed, "the endpoint of %s answered more than %s", def.Spec.Name, sizeText(cfg.MaxOutput))
	}
	return resultFor(def, body)
}
