package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// mapper turns a run's transcript entries (live, from its progress
// through a transcript.Recorder, or read back for session/load) into
// session updates: the model's text as agent_message_chunk, each tool call
// as tool_call and tool_call_update (pending, in_progress as it starts to run,
// completed or failed with its diff or output), the person's messages as
// user_message_chunk on a replay.
type mapper struct {
	q      *updates
	cwd    string
	replay bool

	mu       sync.Mutex
	streamed map[int]string // the text Live streamed, by step
	calls    []*toolCall    // the step's calls not yet answered, in the order the loop runs them
	n        int            // the calls so far
}

// toolCall is a call the client knows as id.
type toolCall struct {
	id        sdk.ToolCallId
	title     string
	kind      sdk.ToolKind
	locations []sdk.ToolCallLocation
	call      gen.ToolCall
}

func newMapper(conn *sdk.AgentSideConnection, s *session, replay bool) *mapper {
	q := newUpdates(func(u sdk.SessionUpdate) error {
		return conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: sdk.SessionId(s.id), Update: u})
	})
	return &mapper{q: q, cwd: s.cwd, replay: replay, streamed: map[int]string{}}
}

// live streams the model's text as it arrives, and marks a tool call in
// progress as it starts to run.
func (m *mapper) live(l agent.Live) {
	if l.Call != nil {
		if c := m.front(); c != nil {
			m.q.push(sdk.UpdateToolCall(c.id, sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
		}
		return
	}
	if l.Text == "" {
		return
	}
	m.mu.Lock()
	m.streamed[l.Step] += l.Text
	m.mu.Unlock()
	m.q.push(sdk.UpdateAgentMessageText(l.Text))
}

// say sends text of step as the agent's message, unless Live streamed it.
func (m *mapper) say(step int, text string) {
	m.mu.Lock()
	streamed := m.streamed[step]
	m.mu.Unlock()
	if text != "" && !strings.Contains(streamed, strings.TrimSpace(text)) {
		m.q.push(sdk.UpdateAgentMessageText(text))
	}
}

// Write maps one entry; it never fails (transcript.Sink).
func (m *mapper) Write(e gen.TranscriptEntry) error {
	switch e.EventType {
	case gen.TraceEventTypeRunStarted:
		if m.replay && e.Task != nil {
			m.q.push(sdk.UpdateUserMessageText(*e.Task))
		}
	case gen.TraceEventTypeModelAction:
		m.say(e.Step, deref(e.Text))
		if e.Action == nil {
			break
		}
		switch a, _ := e.Action.ValueByDiscriminator(); a := a.(type) {
		case gen.ToolCall:
			c := m.started(e, a)
			m.q.push(sdk.StartToolCall(c.id, c.title, sdk.WithStartKind(c.kind), sdk.WithStartStatus(sdk.ToolCallStatusPending),
				sdk.WithStartLocations(c.locations), sdk.WithStartRawInput(a.Arguments)))
		case gen.Finish:
			m.say(e.Step, "\n"+a.Answer)
		}
	case gen.TraceEventTypeObservation:
		if c := m.answered(); c != nil && e.Observation != nil {
			m.q.push(m.result(c, e))
		}
	case gen.TraceEventTypeFinishRejected:
		if e.Check != nil {
			m.q.push(sdk.UpdateAgentMessageText(fmt.Sprintf("\n\nThe check failed (exit code %d); the agent goes on.\n\n", e.Check.ExitCode)))
		}
	case gen.TraceEventTypeRunFinished:
		if r := e.Result; r != nil && r.Error != nil && r.ExitReason != gen.ExitReasonCancelled {
			m.q.push(sdk.UpdateAgentMessageText(fmt.Sprintf("\n\nspecloop: the run ended %s: %s\n", r.ExitReason, *r.Error)))
		}
	}
	return nil
}

// started records call a of entry e as the step's next call to answer.
func (m *mapper) started(e gen.TranscriptEntry, a gen.ToolCall) *toolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	c := &toolCall{id: sdk.ToolCallId(fmt.Sprintf("%s-%d", e.RunId, m.n)), call: a, kind: kindOf(a)}
	c.title = a.ToolName
	if p := as[gen.ReadFileInput](a.Arguments).Path; p != "" {
		c.title += " " + p
		loc := sdk.ToolCallLocation{Path: filepath.Join(m.cwd, filepath.FromSlash(p))}
		if t := builtin(a.ToolName); t != nil && t.Hints != nil && t.Hints.LineRange != nil {
			loc.Line = as[gen.ReadFileInput](a.Arguments).StartLine
		}
		c.locations = []sdk.ToolCallLocation{loc}
	}
	if cmd := as[gen.RunCommandInput](a.Arguments).Command; cmd != "" {
		c.title = cmd
	}
	m.calls = append(m.calls, c)
	return c
}

// front is the call the loop runs now.
func (m *mapper) front() *toolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) == 0 {
		return nil
	}
	return m.calls[0]
}

// current is the call an approval request is about: the front one, or one
// the client has not seen (no event announced it).
func (m *mapper) current(call gen.ToolCall) *toolCall {
	if c := m.front(); c != nil {
		return c
	}
	return &toolCall{id: sdk.ToolCallId(deref(call.CallId)), title: call.ToolName, kind: kindOf(call)}
}

// answered removes the front call, which its observation answers.
func (m *mapper) answered() *toolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) == 0 {
		return nil
	}
	c := m.calls[0]
	m.calls = m.calls[1:]
	return c
}

// result is the update that ends call c with observation entry e: a diff
// for an edit, the output for anything else (a command's fenced).
func (m *mapper) result(c *toolCall, e gen.TranscriptEntry) sdk.SessionUpdate {
	o := e.Observation
	status := sdk.ToolCallStatusCompleted
	if o.IsError {
		status = sdk.ToolCallStatusFailed
	}
	text := o.Content
	if e.Output != nil {
		text = *e.Output
	}
	content := []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}
	edit := as[gen.WriteFileResult](o.Data) // edit_file's result too
	switch {
	case c.kind == sdk.ToolKindEdit && edit.Diff != "" && edit.Path != "":
		old, now := hunks(edit.Diff)
		abs := filepath.Join(m.cwd, filepath.FromSlash(edit.Path))
		if old == "" {
			content = []sdk.ToolCallContent{sdk.ToolDiffContent(abs, now)}
		} else {
			content = []sdk.ToolCallContent{sdk.ToolDiffContent(abs, now, old)}
		}
	case c.kind == sdk.ToolKindExecute:
		content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("```\n" + strings.TrimSuffix(text, "\n") + "\n```"))}
	}
	return sdk.UpdateToolCall(c.id, sdk.WithUpdateStatus(status), sdk.WithUpdateContent(content))
}

// hunks returns the old and the new text of a unified diff's hunks: their
// context and removed lines, their context and added lines.
func hunks(diff string) (old, now string) {
	var o, n strings.Builder
	in := false
	for l := range strings.SplitAfterSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			in = true
		case !in || l == "":
		case l[0] == ' ':
			o.WriteString(l[1:])
			n.WriteString(l[1:])
		case l[0] == '-':
			o.WriteString(l[1:])
		case l[0] == '+':
			n.WriteString(l[1:])
		}
	}
	return o.String(), n.String()
}

// as is v, a call's arguments or an observation's data, as the generated
// type T (what v lacks, or holds of another type, left zero).
func as[T any](v any) (t T) {
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &t)
	return t
}

// builtin is the spec's built-in tool name, nil for any other.
func builtin(name string) *gen.BuiltinTool {
	tools := gen.BuiltinTools()
	if i := slices.IndexFunc(tools, func(t gen.BuiltinTool) bool { return t.Name == name }); i >= 0 {
		return &tools[i]
	}
	return nil
}

// kindOf is what a call does, as ACP names it, from the spec's traits of
// its built-in tool: edit for tools that write files, execute for
// commands, search for a search (a pattern), read for the other tools
// that look at the workspace (they have hints); other for the rest (the
// calculator, MCP and custom tools, whose effects specloop cannot vouch
// for).
func kindOf(call gen.ToolCall) sdk.ToolKind {
	t := builtin(call.ToolName)
	switch {
	case t == nil:
		return sdk.ToolKindOther
	case t.WritesFiles:
		return sdk.ToolKindEdit
	case t.RunsCommands:
		return sdk.ToolKindExecute
	case as[gen.SearchInput](call.Arguments).Pattern != "":
		return sdk.ToolKindSearch
	case t.Hints != nil:
		return sdk.ToolKindRead
	}
	return sdk.ToolKindOther
}

// updates sends a session's updates in order from a goroutine of its own,
// so that the run never waits for the client: push never blocks. While
// the client is slow, consecutive message chunks are merged into one, so
// the queue holds at most one chunk between two tool updates (a few per
// tool call, which the turn's steps bound).
type updates struct {
	mu     sync.Mutex
	cond   *sync.Cond // signalled at each push and at the end of each batch
	queue  []sdk.SessionUpdate
	busy   bool // a batch is being sent
	closed bool
}

func newUpdates(send func(sdk.SessionUpdate) error) *updates {
	q := &updates{}
	q.cond = sync.NewCond(&q.mu)
	go q.run(send)
	return q
}

func (q *updates) push(u sdk.SessionUpdate) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.queue); n > 0 && text(u) != nil && text(q.queue[n-1]) != nil {
		text(q.queue[n-1]).Text += text(u).Text
	} else {
		q.queue = append(q.queue, u)
	}
	q.cond.Broadcast()
}

// text is u's text when u is a text chunk of the agent's message.
func text(u sdk.SessionUpdate) *sdk.ContentBlockText {
	if c := u.AgentMessageChunk; c != nil {
		return c.Content.Text
	}
	return nil
}

func (q *updates) run(send func(sdk.SessionUpdate) error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.queue) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.queue) == 0 {
			return
		}
		batch := q.queue
		q.queue, q.busy = nil, true
		q.mu.Unlock()
		for _, u := range batch {
			_ = send(u) // a client gone: the connection's end cancels the turn
		}
		q.mu.Lock()
		q.busy = false
		q.cond.Broadcast()
	}
}

// flush returns once every update pushed is sent.
func (q *updates) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) > 0 || q.busy {
		q.cond.Wait()
	}
}

// close sends what is queued and ends the sender.
func (q *updates) close() {
	q.flush()
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}
