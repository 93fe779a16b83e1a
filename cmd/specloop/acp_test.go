package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// acpClient is an editor as the tests play it, on the library's client
// side: it keeps every update and answers permission requests with the
// next kind sent on answers (none sent: it never answers).
type acpClient struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	got     chan struct{} // a send at each update, when not full
	answers chan sdk.PermissionOptionKind
	asked   chan sdk.RequestPermissionRequest
}

func (c *acpClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
	return nil
}

func (c *acpClient) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.asked <- p
	select {
	case k := <-c.answers:
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(k))}, nil
	case <-ctx.Done():
		return sdk.RequestPermissionResponse{}, ctx.Err()
	}
}

// take returns the updates so far and forgets them.
func (c *acpClient) take() []sdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.updates
	c.updates = nil
	return u
}

func (c *acpClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}
func (c *acpClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}
func (c *acpClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}
func (c *acpClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}
func (c *acpClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}
func (c *acpClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}
func (c *acpClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}

// acpStart runs `specloop acp ARGS` in-process on pipes and connects a
// client to it; the command ends when the test does.
func acpStart(t testing.TB, args ...string) (*sdk.ClientSideConnection, *acpClient, *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), append([]string{"acp"}, args...), inR, outW, stderr)
		outW.Close()
	}()
	c := &acpClient{got: make(chan struct{}, 1), answers: make(chan sdk.PermissionOptionKind, 4), asked: make(chan sdk.RequestPermissionRequest, 4)}
	stdout := &syncBuffer{} // all of it: nothing but protocol messages
	conn := sdk.NewClientSideConnection(c, inW, io.TeeReader(outR, stdout))
	conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(time.Minute): // a hang guard
			t.Errorf("specloop acp did not end:\n%s", stderr.String())
		}
		for line := range strings.Lines(stdout.String()) {
			var m struct{ JSONRPC string }
			if json.Unmarshal([]byte(line), &m) != nil || m.JSONRPC != "2.0" {
				t.Errorf("standard output holds more than JSON-RPC messages: %q", line)
			}
		}
		if t.Failed() {
			t.Logf("specloop acp's stderr:\n%s", stderr.String())
		}
	})
	if _, err := conn.Initialize(context.Background(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return conn, c, stderr
}

// acpScript writes a script of raw model responses.
func acpScript(t testing.TB, lines ...string) string {
	path := filepath.Join(t.TempDir(), "model.script")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolUpdates returns the tool calls started and the updates of each,
// by call id, and the agent's text.
func toolUpdates(us []sdk.SessionUpdate) (started []*sdk.SessionUpdateToolCall, updates map[sdk.ToolCallId][]*sdk.SessionToolCallUpdate, text string) {
	updates = map[sdk.ToolCallId][]*sdk.SessionToolCallUpdate{}
	for _, u := range us {
		switch {
		case u.ToolCall != nil:
			started = append(started, u.ToolCall)
		case u.ToolCallUpdate != nil:
			updates[u.ToolCallUpdate.ToolCallId] = append(updates[u.ToolCallUpdate.ToolCallId], u.ToolCallUpdate)
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			text += u.AgentMessageChunk.Content.Text.Text
		}
	}
	return started, updates, text
}

func acpPrompt(t *testing.T, conn *sdk.ClientSideConnection, sid sdk.SessionId, text string) sdk.StopReason {
	t.Helper()
	resp, err := conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return resp.StopReason
}

// An editor's session with a scripted model: a prompt edits a file (a
// diff in its tool_call_update), runs a command the person allows (its
// output), and ends the turn; the next prompt continues the conversation
// (the same script again: the edit no longer applies and fails, the
// command is rejected); session/load replays both turns and goes on.
func TestACPSessionScripted(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := acpScript(t,
		`{"type":"tool_call","tool_name":"edit_file","arguments":{"path":"hello.txt","old_text":"hello","new_text":"goodbye"}}`,
		`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"cat hello.txt"}}`,
		`{"type":"finish","answer":"said goodbye"}`)
	args := []string{"--script", script, "--approval", "commands", "--sandbox", "none"}
	conn, c, _ := acpStart(t, args...)
	sess, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	c.answers <- sdk.PermissionOptionKindAllowOnce
	if stop := acpPrompt(t, conn, sess.SessionId, "say goodbye"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", stop)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "hello.txt")); string(data) != "goodbye\n" {
		t.Errorf("hello.txt holds %q", data)
	}
	asked := <-c.asked
	if k := asked.ToolCall.Kind; k == nil || *k != sdk.ToolKindExecute || len(asked.Options) != 3 {
		t.Errorf("the permission request: %+v", asked)
	}
	started, updates, text := toolUpdates(c.take())
	if len(started) != 2 || started[0].Kind != sdk.ToolKindEdit || started[1].Kind != sdk.ToolKindExecute || started[1].Title != "cat hello.txt" {
		t.Fatalf("the tool calls: %+v", started)
	}
	if loc := started[0].Locations; len(loc) != 1 || loc[0].Path != filepath.Join(ws, "hello.txt") || started[0].Status != sdk.ToolCallStatusPending {
		t.Errorf("the edit's start: %+v", started[0])
	}
	// A call nobody is asked about is in progress as it starts to run.
	edit := updates[started[0].ToolCallId]
	if len(edit) != 2 || *edit[0].Status != sdk.ToolCallStatusInProgress || *edit[1].Status != sdk.ToolCallStatusCompleted || len(edit[1].Content) != 1 || edit[1].Content[0].Diff == nil {
		t.Fatalf("the edit's updates: %+v", edit)
	}
	if d := edit[1].Content[0].Diff; d.Path != filepath.Join(ws, "hello.txt") || d.NewText != "goodbye\n" || d.OldText == nil || *d.OldText != "hello\n" {
		t.Errorf("the edit's diff: %+v", d)
	}
	cmd := updates[started[1].ToolCallId]
	if len(cmd) != 2 || *cmd[0].Status != sdk.ToolCallStatusInProgress || *cmd[1].Status != sdk.ToolCallStatusCompleted ||
		cmd[1].Content[0].Content == nil || !strings.Contains(cmd[1].Content[0].Content.Content.Text.Text, "goodbye") {
		t.Errorf("the command's updates: %+v", cmd)
	}
	if !strings.Contains(text, "said goodbye") {
		t.Errorf("the agent's text: %q", text)
	}

	c.answers <- sdk.PermissionOptionKindRejectOnce
	if stop := acpPrompt(t, conn, sess.SessionId, "again"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("the second turn's stop reason %s", stop)
	}
	<-c.asked
	started, updates, _ = toolUpdates(c.take())
	for i, s := range started {
		if u := updates[s.ToolCallId]; len(u) == 0 || *u[len(u)-1].Status != sdk.ToolCallStatusFailed {
			t.Errorf("the second turn's call %d (%s): %+v", i, s.Title, u)
		}
	}

	// Another editor loads the session: both turns come back, the person's
	// messages among them, and a third turn goes on from them.
	conn2, c2, _ := acpStart(t, args...)
	if _, err := conn2.LoadSession(context.Background(), sdk.LoadSessionRequest{SessionId: sess.SessionId, Cwd: ws, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var users []string
	replayed := c2.take()
	for _, u := range replayed {
		if u.UserMessageChunk != nil {
			users = append(users, u.UserMessageChunk.Content.Text.Text)
		}
	}
	if strings.Join(users, "|") != "say goodbye|again" {
		t.Errorf("the replayed messages: %q", users)
	}
	if started, _, _ := toolUpdates(replayed); len(started) != 4 {
		t.Errorf("%d tool calls replayed, want 4", len(started))
	}
	c2.answers <- sdk.PermissionOptionKindAllowAlways
	if stop := acpPrompt(t, conn2, sess.SessionId, "third"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("the third turn's stop reason %s", stop)
	}
	var runs []string
	data, _ := os.ReadFile(filepath.Join(os.Getenv("XDG_STATE_HOME"), "specloop", "acp", string(sess.SessionId)+".json"))
	if err := json.Unmarshal(data, &runs); err != nil || len(runs) != 3 {
		t.Errorf("the session's runs: %s", data)
	}
	if rq, _, err := loadRunRequest(runs[2]); err != nil || rq.Continues != runs[1] {
		t.Errorf("the third run continues %v, want %s (%v)", rq, runs[1], err)
	}
}

// A session with an OpenAI-compatible provider: the model's text reaches
// the editor, and the second prompt is a follow-up whose request holds the
// first turn's text.
func TestACPSessionProvider(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	url, bodies := chatServer(t,
		[]string{"I will multiply first.", "calculator", `{"left":12,"operation":"multiply","right":7}`},
		[]string{"", "finish", `{"answer":"84"}`},
		[]string{"It is 85 now."},
	)
	conn, c, _ := acpStart(t, "--model", "openai:gpt-test", "--base-url", url, "--no-commands")
	sess, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if stop := acpPrompt(t, conn, sess.SessionId, "Compute 12 x 7."); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", stop)
	}
	started, _, text := toolUpdates(c.take())
	if len(started) != 1 || started[0].Kind != sdk.ToolKindOther || !strings.Contains(text, "I will multiply first.") || !strings.Contains(text, "84") {
		t.Errorf("the first turn: %+v, %q", started, text)
	}
	if stop := acpPrompt(t, conn, sess.SessionId, "Add one."); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", stop)
	}
	if _, _, text := toolUpdates(c.take()); strings.Count(text, "It is 85 now.") != 1 {
		t.Errorf("the second turn's text: %q", text)
	}
	if got := bodies(); len(got) != 3 || !strings.Contains(got[2], "I will multiply first.") || !strings.Contains(got[2], "Add one.") {
		t.Errorf("the follow-up's request lacks the conversation: %d requests", len(got))
	}
}

// session/cancel stops the turn in progress: the prompt ends cancelled,
// and the session takes the next one.
func TestACPCancel(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	asked, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thinks := false
		first.Do(func() { thinks = true })
		switch {
		case thinks:
			close(asked)
			select { // the model thinks until the turn is stopped
			case <-r.Context().Done():
			case <-release:
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"finish","arguments":"{\"answer\":\"done\"}"}}]}}]}`)
		}
	}))
	defer srv.Close()
	defer close(release)
	conn, _, _ := acpStart(t, "--model", "openai:gpt-test", "--base-url", srv.URL, "--no-commands")
	sess, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	stops := make(chan sdk.StopReason, 1)
	go func() { stops <- acpPrompt(t, conn, sess.SessionId, "think forever") }()
	<-asked
	if err := conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: sess.SessionId}); err != nil {
		t.Fatal(err)
	}
	if stop := <-stops; stop != sdk.StopReasonCancelled {
		t.Fatalf("stop reason %s", stop)
	}
	if stop := acpPrompt(t, conn, sess.SessionId, "finish now"); stop != sdk.StopReasonEndTurn {
		t.Errorf("the next turn's stop reason %s", stop)
	}
}

// A client that never answers a permission request: the call is denied
// at the approval timeout, the question withdrawn, and the turn goes on.
func TestACPPermissionTimeout(t *testing.T) {
	script := acpScript(t,
		`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"echo hi"}}`,
		`{"type":"finish","answer":"done"}`)
	conn, c, _ := acpStart(t, "--script", script, "--approval", "commands", "--approval-timeout", "200ms", "--sandbox", "none")
	sess, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if stop := acpPrompt(t, conn, sess.SessionId, "run it"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", stop)
	}
	<-c.asked
	started, updates, _ := toolUpdates(c.take())
	if len(started) != 1 {
		t.Fatalf("the tool calls: %+v", started)
	}
	u := updates[started[0].ToolCallId]
	if len(u) != 1 || *u[0].Status != sdk.ToolCallStatusFailed || !strings.Contains(u[0].Content[0].Content.Content.Text.Text, "timeout") {
		t.Errorf("the timed-out call's updates: %+v", u)
	}
}

// Bad input gets a JSON-RPC error each, and the connection goes on: a
// line that is not JSON, JSON that is no request, an unknown method, a
// prompt for an unknown session, and cwds the user does not allow.
func TestACPBadInput(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"acp", "--script", "testdata/calculator.script", "--workspace", root}, inR, outW, stderr)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	send := func(line string) (code int) {
		t.Helper()
		io.WriteString(inW, line+"\n")
		if !lines.Scan() {
			t.Fatalf("no answer to %s:\n%s", line, stderr.String())
		}
		var resp struct {
			Error *struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal(lines.Bytes(), &resp); err != nil || resp.Error == nil {
			t.Fatalf("the answer to %s: %s", line, lines.Bytes())
		}
		return resp.Error.Code
	}
	for _, c := range []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{`[1,2]`, -32600},
		{`{"jsonrpc":"2.0"}`, -32600},
		{`{"jsonrpc":"2.0","id":2,"method":"session/fly","params":{}}`, -32601},
		{`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, -32602},
		{`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}`, -32602},
		{`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":` + jsonString(file) + `,"mcpServers":[]}}`, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":` + jsonString(t.TempDir()) + `,"mcpServers":[]}}`, -32602},
		{`{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"../x","cwd":` + jsonString(root) + `,"mcpServers":[]}}`, -32602},
	} {
		if code := send(c.line); code != c.code {
			t.Errorf("%s: error %d, want %d", c.line, code, c.code)
		}
	}
	inW.Close()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// BenchmarkACPFirstUpdate is the time from session/prompt to the first
// session/update with a scripted model, whose first reply is a tool call:
// the turn's run opened as `specloop run` opens one (flags, configuration,
// workspace, transcript and trace) and its first step. Each prompt is a
// new session's first.
func BenchmarkACPFirstUpdate(b *testing.B) {
	script := acpScript(b, `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":2}}`, `{"type":"finish","answer":"3"}`)
	conn, c, _ := acpStart(b, "--script", script, "--no-commands")
	ws := b.TempDir()
	var first time.Duration
	for b.Loop() {
		sess, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		c.take()
		select {
		case <-c.got:
		default:
		}
		start := time.Now()
		stops := make(chan error, 1)
		go func() {
			_, err := conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("add")}})
			stops <- err
		}()
		<-c.got
		first += time.Since(start)
		if err := <-stops; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms/first-update")
}

// The client's MCP servers are the session's, as --mcp gives them: a
// stdio server's tools are offered as NAME__tool (here specloop mcp
// itself, its path with a quote in it), and one with environment
// variables, which --mcp has no place for, is left out with a warning.
func TestACPMCPServers(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(selfServerEnv, "1")
	quoted := filepath.Join(t.TempDir(), "it's specloop")
	if err := os.Symlink(exe, quoted); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	script := acpScript(t,
		`{"type":"tool_call","tool_name":"self__calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`{"type":"finish","answer":"84"}`)
	conn, c, stderr := acpStart(t, "--script", script, "--no-commands")
	sess, err := conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "self", Command: quoted, Args: []string{"mcp", "--no-commands", "--workspace", ws}, Env: []sdk.EnvVariable{}}},
		{Stdio: &sdk.McpServerStdio{Name: "keyed", Command: "/nonexistent", Args: []string{}, Env: []sdk.EnvVariable{{Name: "KEY", Value: "v"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if stop := acpPrompt(t, conn, sess.SessionId, "multiply"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", stop)
	}
	started, updates, _ := toolUpdates(c.take())
	if len(started) != 1 || started[0].Kind != sdk.ToolKindOther || started[0].Title != "self__calculator" {
		t.Fatalf("the tool calls: %+v", started)
	}
	if u := updates[started[0].ToolCallId]; len(u) != 2 || *u[0].Status != sdk.ToolCallStatusInProgress || *u[1].Status != sdk.ToolCallStatusCompleted || !strings.Contains(u[1].Content[0].Content.Content.Text.Text, "84") {
		t.Errorf("the MCP call's updates: %+v", u)
	}
	if !strings.Contains(stderr.String(), "left out") {
		t.Errorf("no warning of the server left out:\n%s", stderr.String())
	}
}
