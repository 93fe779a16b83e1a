// Package acp serves specloop to an editor as an Agent Client Protocol agent on stdio, each ACP session a conversation of specloop runs.
package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/transcript"
)

// Host is what the agent needs of specloop: `specloop acp` runs each turn
// as `specloop run` does.
type Host interface {
	// Workspace reports why cwd may not be a session's workspace, or nil.
	Workspace(cwd string) error
	// Turn runs one turn of a conversation to its end and returns its
	// run's id ("" when no run started: what it wrote to t.Stderr says
	// why) and result.
	Turn(ctx context.Context, t Turn) (id string, res gen.RunResult, err error)
	// Transcript reads run id's transcript.
	Transcript(id string) (*transcript.Log, error)
}

// Turn is one prompt of a session: a run of Prompt in Cwd, which
// continues run Continues when set, with the session's MCP servers; the
// run reports to Observer and Live, asks Approver and writes its errors
// to Stderr (from any goroutine).
type Turn struct {
	Cwd, Prompt, Continues string
	MCP                    []mcpclient.Server
	Observer               func(agent.Progress)
	Live                   func(agent.Live)
	Approver               agent.Approver
	Stderr                 io.Writer
}

// Config configures Serve.
type Config struct {
	Host Host
	// SessionDir keeps each session's runs, for session/load.
	SessionDir string
	Version    string
	// Logger gets what goes wrong on the connection; nil discards it.
	Logger *slog.Logger
}

// agentConn is the Agent of one connection.
type agentConn struct {
	cfg  Config
	ctx  context.Context // Serve's
	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	sessions map[string]*session
	turns    sync.WaitGroup
}

// session is one ACP session: a conversation's runs in a workspace.
type session struct {
	id, cwd string
	mcp     []mcpclient.Server

	mu     sync.Mutex
	runs   []string           // oldest first
	cancel context.CancelFunc // the turn in progress; nil when none
	always map[string]bool    // tools the person allowed always
}

// Serve speaks ACP on in and out (one JSON-RPC message a line) until in
// ends or ctx is done, and returns once the turns in progress, cancelled
// then, have ended.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	a := &agentConn{cfg: cfg, ctx: ctx, sessions: map[string]*session{}}
	a.conn = sdk.NewAgentSideConnection(a, w, pr)
	a.conn.SetLogger(cfg.Logger)
	go func() { pw.CloseWithError(filterLines(in, pw, w)) }()
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
	}
	a.mu.Lock()
	for _, s := range a.sessions {
		s.stop()
	}
	a.mu.Unlock()
	a.turns.Wait()
	return ctx.Err()
}

var _ sdk.AgentLoader = (*agentConn)(nil)

func (a *agentConn) Initialize(context.Context, sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{ProtocolVersion: sdk.ProtocolVersionNumber, AuthMethods: []sdk.AuthMethod{},
		AgentInfo: &sdk.Implementation{Name: "specloop", Version: a.cfg.Version},
		// Text and resource links are every agent's; MCP over stdio too.
		AgentCapabilities: sdk.AgentCapabilities{LoadSession: true, McpCapabilities: sdk.McpCapabilities{Http: true}}}, nil
}

func (a *agentConn) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil // no method offered: a model's key comes from the environment
}

func (a *agentConn) NewSession(_ context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := a.open(agent.NewRunID(), p.Cwd, p.McpServers, nil)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id)}, nil
}

// open makes session id in cwd, which the host must allow, with the runs
// it had.
func (a *agentConn) open(id, cwd string, servers []sdk.McpServer, runs []string) (*session, error) {
	if err := a.cfg.Host.Workspace(cwd); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"cwd": err.Error()})
	}
	s := &session{id: id, cwd: cwd, mcp: a.mcpServers(servers), runs: runs, always: map[string]bool{}}
	a.mu.Lock()
	if old := a.sessions[id]; old != nil {
		old.stop()
	}
	a.sessions[id] = s
	a.mu.Unlock()
	return s, nil
}

// mcpServers are the client's MCP servers as specloop's MCP client takes
// them, like --mcp: a server it cannot take (environment variables or
// headers, which --mcp has no place for either, or a name --mcp refuses)
// is left out, with a warning in the log.
func (a *agentConn) mcpServers(in []sdk.McpServer) []mcpclient.Server {
	var out []mcpclient.Server
	for _, m := range in {
		var s mcpclient.Server
		switch {
		case m.Stdio != nil && len(m.Stdio.Env) == 0:
			s = mcpclient.Server{Name: m.Stdio.Name, Command: append([]string{m.Stdio.Command}, m.Stdio.Args...)}
		case m.Http != nil && len(m.Http.Headers) == 0:
			s = mcpclient.Server{Name: m.Http.Name, URL: m.Http.Url}
		default:
			a.cfg.Logger.Warn("an MCP server with environment variables or headers, or over SSE, is left out")
			continue
		}
		if err := s.Validate(); err != nil {
			a.cfg.Logger.Warn("an MCP server is left out", "err", err)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (a *agentConn) session(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[string(id)]; s != nil {
		return s, nil
	}
	return nil, sdk.NewInvalidParams(map[string]any{"sessionId": "no session has this id (session/new or session/load first)"})
}

// stop cancels the session's turn in progress, if any.
func (s *session) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

func (a *agentConn) Cancel(_ context.Context, p sdk.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err == nil {
		s.stop()
	}
	return err
}

// stopReasons are the stop reasons of the runs' exit reasons; a run that
// ended otherwise (model_error, internal_error, interrupted, and
// setup_failed, which an editor's runs, having no setup, never reach) fails
// the prompt. A provider's refusal is feedback to the model, which costs a
// step: a run never ends on one.
var stopReasons = map[gen.ExitReason]sdk.StopReason{
	gen.ExitReasonFinished:              sdk.StopReasonEndTurn,
	gen.ExitReasonStuck:                 sdk.StopReasonEndTurn,
	gen.ExitReasonMaxStepsExceeded:      sdk.StopReasonMaxTurnRequests,
	gen.ExitReasonCheckFailed:           sdk.StopReasonMaxTurnRequests,
	gen.ExitReasonInvalidModelOutput:    sdk.StopReasonMaxTurnRequests,
	gen.ExitReasonTokenBudgetExceeded:   sdk.StopReasonMaxTokens,
	gen.ExitReasonContextWindowExceeded: sdk.StopReasonMaxTokens,
	gen.ExitReasonCancelled:             sdk.StopReasonCancelled,
}

// Prompt runs the session's next turn: its first prompt a run, each next
// one a follow-up that continues the run before it.
func (a *agentConn) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, err := promptText(p.Prompt, s.cwd)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"prompt": err.Error()})
	}
	turn, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(a.ctx, cancel)()
	s.mu.Lock()
	if s.cancel != nil {
		s.mu.Unlock()
		return sdk.PromptResponse{}, sdk.NewInvalidRequest(map[string]any{"sessionId": "a turn is in progress in this session; cancel it or wait for its end"})
	}
	s.cancel = cancel
	last := ""
	if n := len(s.runs); n > 0 {
		last = s.runs[n-1]
	}
	a.turns.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
		a.turns.Done()
	}()

	m := newMapper(a.conn, s, false)
	var errs bytes.Buffer
	stderr := &lockedWriter{w: &errs}
	id, res, err := a.cfg.Host.Turn(turn, Turn{Cwd: s.cwd, Prompt: text, Continues: last, MCP: s.mcp,
		Observer: transcript.NewRecorder(m, "").Observe, Live: m.live, Stderr: stderr,
		Approver: agent.ApproverFunc(func(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
			return a.approve(ctx, s, m, req)
		})})
	m.q.close()
	if id == "" && err == nil {
		stderr.mu.Lock()
		err = errors.New(strings.TrimSpace(errs.String()))
		stderr.mu.Unlock()
	}
	// A run stopped before the model replied continues too: its history
	// keeps the person's message (runner.History).
	if id != "" {
		s.mu.Lock()
		s.runs = append(s.runs, id)
		runs := s.runs
		s.mu.Unlock()
		if err := a.save(s.id, runs); err != nil {
			a.cfg.Logger.Error("keep the session's runs", "err", err)
		}
	}
	stop, ok := stopReasons[res.ExitReason]
	switch {
	case turn.Err() != nil && (err != nil || id == ""):
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case err != nil:
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	case !ok:
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": deref(res.Error), "exit_reason": res.ExitReason, "run": id})
	}
	return sdk.PromptResponse{StopReason: stop}, nil
}

// promptText is the task of a prompt's content: its text, and each
// resource link as its path in the workspace or its URI.
func promptText(blocks []sdk.ContentBlock, cwd string) (string, error) {
	var b strings.Builder
	for i, c := range blocks {
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			ref := c.ResourceLink.Uri
			if u, err := url.Parse(ref); err == nil && u.Scheme == "file" {
				if rel, err := filepath.Rel(cwd, filepath.FromSlash(u.Path)); err == nil && filepath.IsLocal(rel) {
					ref = filepath.ToSlash(rel)
				}
			}
			fmt.Fprintf(&b, " @%s ", ref)
		default:
			return "", fmt.Errorf("block %d: only text and resource links are taken", i)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", errors.New("the prompt holds no text")
	}
	return b.String(), nil
}

// approve asks the client about the call the loop waits on (the mapper's
// current one), unless the person allowed its tool always in this session
// (and the loop asks for no other reason: that files changed since).
func (a *agentConn) approve(ctx context.Context, s *session, m *mapper, req agent.ApprovalRequest) (agent.Approval, error) {
	tool := req.Call.ToolName
	s.mu.Lock()
	always := s.always[tool] && req.Reason == ""
	s.mu.Unlock()
	if always {
		return agent.Approval{Decision: gen.ApprovalDecisionApproveForRun}, nil
	}
	m.q.flush() // the tool_call before the question about it
	call := m.current(req.Call)
	opt := func(k sdk.PermissionOptionKind, name string) sdk.PermissionOption {
		return sdk.PermissionOption{Kind: k, Name: name, OptionId: sdk.PermissionOptionId(k)}
	}
	resp, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(s.id),
		ToolCall: sdk.ToolCallUpdate{ToolCallId: call.id, Title: &call.title, Kind: &call.kind, Locations: call.locations,
			RawInput: req.Call.Arguments, Status: sdk.Ptr(sdk.ToolCallStatusPending)},
		Options: []sdk.PermissionOption{opt(sdk.PermissionOptionKindAllowOnce, "Allow"),
			opt(sdk.PermissionOptionKindAllowAlways, "Allow "+tool+" always in this session"),
			opt(sdk.PermissionOptionKindRejectOnce, "Reject")}})
	if err != nil {
		return agent.Approval{}, err // the approval timeout denies it
	}
	switch sel := resp.Outcome.Selected; {
	case sel == nil: // the client cancelled the question
		return agent.Approval{Decision: gen.ApprovalDecisionDeny, Reason: "the question was cancelled"}, nil
	case sel.OptionId == sdk.PermissionOptionId(sdk.PermissionOptionKindAllowOnce):
		return agent.Approval{Decision: gen.ApprovalDecisionApprove}, nil
	case sel.OptionId == sdk.PermissionOptionId(sdk.PermissionOptionKindAllowAlways):
		s.mu.Lock()
		s.always[tool] = true
		s.mu.Unlock()
		return agent.Approval{Decision: gen.ApprovalDecisionApproveForRun}, nil
	}
	return agent.Approval{Decision: gen.ApprovalDecisionDeny}, nil
}

// LoadSession replays a stored session's conversation to the client,
// from its runs' transcripts, and opens it in cwd to go on with.
func (a *agentConn) LoadSession(_ context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	id := string(p.SessionId)
	if !ident.Plain(id) {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"sessionId": "not a session id"})
	}
	var runs []string
	data, err := os.ReadFile(a.sessionFile(id))
	if err == nil {
		err = json.Unmarshal(data, &runs)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"sessionId": "no stored session has this id"})
	}
	if err != nil {
		return sdk.LoadSessionResponse{}, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	s, err := a.open(id, p.Cwd, p.McpServers, runs)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	m := newMapper(a.conn, s, true)
	defer m.q.close()
	for _, run := range runs {
		log, err := a.cfg.Host.Transcript(run)
		if err != nil {
			return sdk.LoadSessionResponse{}, sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("run %s: %v", run, err)})
		}
		for _, e := range log.Entries {
			_ = m.Write(e)
		}
	}
	return sdk.LoadSessionResponse{}, nil
}

func (a *agentConn) sessionFile(id string) string {
	return filepath.Join(a.cfg.SessionDir, id+".json")
}

// save keeps session id's runs, for session/load.
func (a *agentConn) save(id string, runs []string) error {
	data, _ := json.Marshal(runs)
	if err := os.MkdirAll(a.cfg.SessionDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(a.sessionFile(id), data, 0o600)
}

// The methods of capabilities specloop does not offer.

func (a *agentConn) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionClose)
}

func (a *agentConn) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

func (a *agentConn) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

func (a *agentConn) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

func (a *agentConn) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}
