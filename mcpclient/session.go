package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/buildinfo"
	"github.com/specloop/specloop/internal/redirect"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/tools"
)

// Defaults for a zero Config.
const (
	// DefaultCallTimeout bounds one tool call.
	DefaultCallTimeout = 2 * time.Minute
	// DefaultConnectTimeout bounds starting a server, the MCP handshake and
	// listing its tools (a shorter deadline of Connect's context wins).
	DefaultConnectTimeout = 30 * time.Second
	// stopGrace is how long a stdio server has to exit once its input is
	// closed, before it is sent SIGTERM (and as long again before SIGKILL).
	stopGrace = 2 * time.Second
)

// MaxContentBytes is the most text of one result the model is shown (as
// much as read_file shows of a file); the rest is cut, and the
// observation says how long the text was.
const MaxContentBytes = 256 << 10

// MaxResponseBytes is the most a streamable HTTP server may answer to one
// request: the SDK reads an answer whole before MaxContentBytes clips its
// text, so a larger one ends the session (mcp_unavailable) instead of
// filling the memory.
const MaxResponseBytes = 16 << 20

// Config configures the sessions with external servers. The zero value
// uses the defaults above and discards what stdio servers write to stderr.
type Config struct {
	// CallTimeout bounds each tool call; 0 means DefaultCallTimeout. A
	// call that takes longer is an mcp_unavailable error Observation.
	CallTimeout time.Duration
	// Stderr receives what stdio servers write to their standard error;
	// nil discards it.
	Stderr io.Writer
}

// Session is a connected external MCP server and the tools it offers. A
// stdio server runs as long as its session: Close stops it, and the
// processes it started.
type Session struct {
	server      Server
	cs          *mcp.ClientSession
	cmd         *exec.Cmd // stdio servers
	tools       []*tool
	callTimeout time.Duration
	ended       chan struct{} // closed when the connection ended
	lost        atomic.Bool   // a call found the connection closed
	closeOnce   sync.Once
	closeErr    error
}

// tool is one tool of a session, as offered to the model.
type tool struct {
	session *Session
	spec    gen.ToolSpec
	name    string // the server's name for it
	input   *validator
	output  *validator // nil without an output schema
	clipped bool       // its description was clipped
}

// Connect starts (stdio) or reaches (HTTP) the server, completes the MCP
// handshake and lists its tools. Every tool must have a usable name and a
// valid input schema within the caps (MaxSchemaBytes, MaxSchemaDepth,
// MaxSchemaCost), and the server may offer at most MaxToolsPerServer
// tools of MaxServerBytes in all; otherwise Connect fails, naming the server and the tool, and
// nothing stays running. Descriptions over MaxDescriptionBytes are
// clipped, which a warning on cfg.Stderr says.
func Connect(ctx context.Context, srv Server, cfg Config) (*Session, error) {
	if err := srv.Validate(); err != nil {
		return nil, err
	}
	s := &Session{server: srv, callTimeout: cfg.CallTimeout, ended: make(chan struct{})}
	if s.callTimeout <= 0 {
		s.callTimeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()

	var transport mcp.Transport
	if srv.URL != "" {
		transport = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: cappedClient, DisableStandaloneSSE: true}
	} else {
		s.cmd = exec.Command(srv.Command[0], srv.Command[1:]...)
		if err := s.cmd.Err; err != nil {
			return nil, s.errorf("cannot start: %w", err)
		}
		if !filepath.IsAbs(s.cmd.Path) {
			abs, err := filepath.Abs(s.cmd.Path)
			if err != nil {
				return nil, s.errorf("cannot start: %w", err)
			}
			s.cmd.Path = abs
		}
		// A stdio server runs in the root of the file system, never in a
		// workspace: it runs unsandboxed, and python -m, npx and the like
		// load code from their working directory. A relative command was
		// resolved against the process's working directory above.
		s.cmd.Dir = string(filepath.Separator)
		// Its environment is built from scratch (BaseEnv and srv.Env), never
		// specloop's own: that holds the providers' keys and the API
		// server's token, and a server may be anyone's program.
		s.cmd.Env = serverEnviron(srv.Env)
		s.cmd.Stderr = cfg.Stderr
		ownProcessGroup(s.cmd)
		transport = &mcp.CommandTransport{Command: s.cmd, TerminateDuration: stopGrace}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "specloop", Version: buildinfo.Version()}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		s.kill()
		return nil, s.errorf("cannot connect: %w", err)
	}
	s.cs = cs
	go func() {
		_ = cs.Wait()
		close(s.ended)
	}()
	clipped, err := s.list(ctx)
	if err != nil {
		s.Close()
		return nil, s.errorf("%w", err)
	}
	if len(clipped) > 0 && cfg.Stderr != nil {
		fmt.Fprintf(cfg.Stderr, "specloop: warning: mcp server %q: the descriptions of %d of its tools (%s) are longer than %d KiB; the model sees the first %d KiB of each, marked as clipped\n",
			s.server.Name, len(clipped), strings.Join(clipped, ", "), MaxDescriptionBytes>>10, MaxDescriptionBytes>>10)
	}
	return s, nil
}

// list lists the server's tools and binds them within the caps; clipped
// are those whose descriptions were clipped.
func (s *Session) list(ctx context.Context) (clipped []string, err error) {
	size := 0
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("cannot list its tools: %w", err)
		}
		if len(s.tools) == MaxToolsPerServer {
			return nil, fmt.Errorf("it offers more than %d tools, the most specloop takes from one server", MaxToolsPerServer)
		}
		bt, err := s.bind(t)
		if err != nil {
			return nil, err
		}
		if bt.clipped {
			clipped = append(clipped, t.Name)
		}
		if size += bt.size(); size > MaxServerBytes {
			return nil, fmt.Errorf("its tools' descriptions and schemas come to more than %d MiB (at tool %q), the most specloop sends the model of one server", MaxServerBytes>>20, t.Name)
		}
		s.tools = append(s.tools, bt)
	}
	return clipped, nil
}

// cappedClient is the client of streamable HTTP servers: every response
// body is capped at MaxResponseBytes, and redirects are followed only
// within the server's scheme and host (a 307 would re-send a call's
// arguments to whatever host it named).
var cappedClient = &http.Client{CheckRedirect: redirect.SameOrigin, Transport: cappedTransport{http.DefaultTransport}}

type cappedTransport struct{ next http.RoundTripper }

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxResponseBytes}
	}
	return resp, err
}

// errResponseTooLarge ends an answer over MaxResponseBytes.
var errResponseTooLarge = fmt.Errorf("the server answered more than %d MiB to one request", MaxResponseBytes>>20)

// cappedBody fails a read once more than left bytes came.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	return n, err
}

func (s *Session) errorf(format string, args ...any) error {
	err := fmt.Errorf("mcp server %q: "+format, append([]any{s.server.Name}, args...)...)
	if msg := s.scrub(err.Error()); msg != err.Error() {
		return &scrubbedError{msg: msg, err: err}
	}
	return err
}

// scrubbedError is an error whose text no longer holds the server's URL;
// errors.Is and errors.As still see the original.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub replaces the server's URL in msg, as the HTTP client and the SDK
// quote it in their errors, by its scheme and host: its path, query and
// user information may be a credential (https://host/mcp?key=...), and
// these messages reach the model, the trace and the logs.
func (s *Session) scrub(msg string) string {
	u, err := url.Parse(s.server.URL)
	if s.server.URL == "" || err != nil {
		return msg
	}
	safe := u.Scheme + "://" + u.Host + "/…"
	full := []string{s.server.URL, u.String(), u.Redacted()}
	var bare []string
	if p, ok := u.User.Password(); ok {
		v := *u
		v.User = url.UserPassword(u.User.Username(), "***")
		full = append(full, v.String())
		bare = append(bare, p)
	}
	bare = append(bare, u.RawQuery)
	for _, f := range full {
		msg = strings.ReplaceAll(msg, f, safe)
	}
	for _, f := range bare {
		// A short password or query is left: replacing it would garble
		// the message, and the whole URL is already gone.
		if len(f) >= 8 {
			msg = strings.ReplaceAll(msg, f, "…")
		}
	}
	return msg
}

// Specs returns the specs of the server's tools as the model sees them
// (NAME__tool), in the order the server listed them.
func (s *Session) Specs() []gen.ToolSpec {
	specs := make([]gen.ToolSpec, len(s.tools))
	for i, t := range s.tools {
		specs[i] = t.spec
	}
	return specs
}

// Close ends the session: a stdio server's input is closed, then it is
// sent SIGTERM and SIGKILL if it does not exit, and every process left in
// its process group is killed. It may be called more than once.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		if s.cs != nil {
			err := s.cs.Close()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) && !errors.Is(err, mcp.ErrConnectionClosed) {
				s.closeErr = s.errorf("close: %w", err)
			}
		}
		s.kill()
	})
	return s.closeErr
}

// kill kills what is left of a stdio server's process group.
func (s *Session) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		killProcessGroup(s.cmd)
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	}
}

// stopped reports whether the connection with the server has ended.
func (s *Session) stopped() bool {
	select {
	case <-s.ended:
		return true
	default:
		return s.lost.Load()
	}
}

// bind checks a listed tool and compiles its schemas.
func (s *Session) bind(t *mcp.Tool) (*tool, error) {
	full := s.server.Name + Separator + t.Name
	if t.Name == "" || !tools.ValidToolName(full) {
		return nil, fmt.Errorf("tool %.64q: %s would not be a valid tool name for a model (letters, digits, - and _, at most 64 in all)", t.Name, s.server.Name+Separator+"TOOL")
	}
	in, inMap, err := compile(full, "input", t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	if typ, _ := inMap["type"].(string); typ != "object" {
		return nil, fmt.Errorf("tool %q: the input schema is not of type object", t.Name)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	desc, clipped := clipDescription(desc)
	bt := &tool{session: s, name: t.Name, input: in, clipped: clipped, spec: gen.ToolSpec{
		Name:              full,
		Description:       desc,
		InputSchema:       inMap,
		OutputDescription: "The text the tool returns (from the MCP server " + s.server.Name + ").",
		ErrorDescription:  "An error observation with code " + string(gen.ErrorCodeMcpToolError) + " when the tool reports an error, " + string(gen.ErrorCodeMcpUnavailable) + " when its server cannot answer.",
		// An MCP server's tool may do anything: its effects are not the
		// runtime's to vouch for, so the approval policies treat it as
		// one that runs commands.
		RunsCommands: true,
	}}
	if t.OutputSchema != nil {
		out, outMap, err := compile(full, "output", t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		bt.output = out
		bt.spec.ResultSchema = &outMap
	}
	return bt, nil
}

// size is what the tool adds to every model request: its description and
// schemas.
func (t *tool) size() int {
	n := len(t.spec.Description) + t.input.size
	if t.output != nil {
		n += t.output.size
	}
	return n
}

// clipDescription cuts a description to MaxDescriptionBytes (on a rune
// boundary), marking the cut; clipped reports whether it did.
func clipDescription(d string) (_ string, clipped bool) {
	if len(d) <= MaxDescriptionBytes {
		return d, false
	}
	return textclip.Head(d, MaxDescriptionBytes) + fmt.Sprintf("\n[description clipped by specloop: the server's was %d bytes]", len(d)), true
}

// compile compiles a tool's JSON Schema (draft 2020-12, or draft-07 when
// it says so) for validation, and returns it as a map for the tool spec.
// References must stay inside the schema: nothing is loaded from files or
// the network. The schema must be within MaxSchemaBytes and
// MaxSchemaDepth before it is compiled, and cost at most MaxSchemaCost
// to validate a value with.
func compile(tool, which string, schema any) (*validator, map[string]any, error) {
	data, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%s schema: %w", which, err)
	}
	var m map[string]any
	if len(data) <= MaxSchemaBytes {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, nil, fmt.Errorf("%s schema: not a JSON object", which)
		}
	}
	if err := checkSchema(len(data), m); err != nil {
		return nil, nil, fmt.Errorf("%s schema: %w", which, err)
	}
	vd, err := newValidator(m)
	if err != nil {
		return nil, nil, fmt.Errorf("%s schema: %w", which, err)
	}
	vd.size = len(data)
	return vd, m, nil
}

// call runs one call of the tool. args were validated.
func (t *tool) call(ctx context.Context, obs gen.Observation, args map[string]any) gen.Observation {
	s := t.session
	if s.stopped() {
		return fail(obs, gen.ErrorCodeMcpUnavailable, fmt.Sprintf("the MCP server %s has stopped; its tools are unavailable for the rest of the run", s.server.Name))
	}
	cctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	res, err := s.cs.CallTool(cctx, &mcp.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		if errors.Is(err, mcp.ErrConnectionClosed) || s.stopped() {
			s.lost.Store(true)
			return fail(obs, gen.ErrorCodeMcpUnavailable, fmt.Sprintf("the MCP server %s stopped during the call; its tools are unavailable for the rest of the run", s.server.Name))
		}
		switch {
		case ctx.Err() != nil:
			return fail(obs, gen.ErrorCodeCancelled, "the tool call was cancelled")
		case cctx.Err() != nil:
			return fail(obs, gen.ErrorCodeMcpUnavailable, fmt.Sprintf("the MCP server %s did not answer within %s", s.server.Name, s.callTimeout))
		}
		return fail(obs, gen.ErrorCodeMcpUnavailable, fmt.Sprintf("the MCP server %s failed the call: %.300s", s.server.Name, s.scrub(err.Error())))
	}
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return fail(obs, gen.ErrorCodeMcpToolError, text)
	}
	obs.Content = text
	if res.StructuredContent != nil {
		if t.output != nil {
			if err := t.output.validate(ctx, res.StructuredContent); err != nil {
				if ctx.Err() != nil {
					return fail(obs, gen.ErrorCodeCancelled, "the tool call was cancelled")
				}
				return fail(obs, gen.ErrorCodeMcpUnavailable, fmt.Sprintf("the MCP server %s broke the protocol: the structured result does not match the tool's output schema (%s)", s.server.Name, describe(err)))
			}
		}
		if m, ok := res.StructuredContent.(map[string]any); ok && t.output != nil {
			obs.Data = &m
		}
	}
	return obs
}

// contentText joins the text of a result's content blocks; other blocks
// are named, not rendered.
func contentText(content []mcp.Content) string {
	parts := make([]string, 0, len(content))
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image content, "+c.MIMEType+"]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio content, "+c.MIMEType+"]")
		case *mcp.ResourceLink:
			parts = append(parts, "[resource link "+c.URI+"]")
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, "[embedded resource]")
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	text := strings.Join(parts, "\n")
	if len(text) > MaxContentBytes {
		text = textclip.Head(text, MaxContentBytes) + fmt.Sprintf("\n[the result was clipped: %d bytes in all]", len(text))
	}
	return text
}

// describe says where and why a value fails a schema, naming the JSON
// pointer of the value, never the value, or which bound it is over.
func describe(err error) string {
	var se *schema.Error
	switch {
	case errors.Is(err, errTooDeep) || errors.Is(err, errTooMuchWork):
		return err.Error()
	case errors.As(err, &se):
		return se.Error()
	}
	return "it does not match the schema"
}

// fail makes obs the error Observation of code; the loop clips long
// messages.
func fail(obs gen.Observation, code gen.ErrorCode, message string) gen.Observation {
	obs.IsError, obs.ErrorCode, obs.Content = true, &code, "error: "+message
	return obs
}
