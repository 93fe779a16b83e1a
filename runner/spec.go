package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/transcript"
	"github.com/specloop/specloop/wiring"
)

// Spec is one run, end to end: the API's request (a client's, or the one
// `specloop run` makes of its flags) and the little a request cannot say.
// Open turns it into the run's setup and the loop's options, the same way
// for the runner, the CLI and the Temporal workers; the Temporal workflow's
// input embeds it.
type Spec struct {
	gen.CreateRunRequest
	// ID is the run's id; "" lets the loop make one.
	ID string
	// ApprovalTimeout is how long a tool call waits for approval:
	// approval_timeout_seconds, or the default of whoever accepted the
	// run; 0 means agent.DefaultApprovalTimeout.
	ApprovalTimeout time.Duration `json:",omitempty"`
	// RecordRaw records the model's raw output in the trace (`specloop run
	// --record-raw`; the API never does).
	RecordRaw bool `json:",omitempty"`
	// System is the system prompt of the run's openai or anthropic model
	// that the runner which accepted the run was configured with
	// (Config.System: serve --system-file); "" means the adapters'
	// default prompt. It travels with the run, so that an Engine's
	// workers build the model the API server would (temporal: the
	// workers' SystemModels); it is the server's, never the request's,
	// and is not kept with the run's request (set again on a resume).
	// An embedded run gets both from its runner's configuration.
	System string `json:",omitempty"`
	// CustomTools are the documents of the custom tools the runner that
	// accepted the run offers (Config.ToolSpecs: serve --tools-spec), as
	// data: an Engine's workers load them again with the handlers their
	// operations declare and offer them (temporal). Like System, they are
	// the server's, not kept with the run's request.
	CustomTools []string `json:",omitempty"`
	// FollowUp, when set, makes the run the next turn of a conversation
	// (agent.Options.FollowUp): the history the run it continues ended
	// with, and the person's message (see Continue).
	FollowUp *agent.FollowUp `json:",omitempty"`

	// What only an in-process run has: who decides its approvals and who
	// watches its progress (its events, and the live news of a step:
	// agent.Options.Live). Where its workspace, trace and transcript are
	// is its host's (Open).
	Approver agent.Approver       `json:"-"`
	Observer func(agent.Progress) `json:"-"`
	Live     func(agent.Live)     `json:"-"`
	// Conversation, for a follow-up whose history is not given, are the
	// runs it continues, oldest first: Open rebuilds the history from
	// their transcripts (History) and sets Task to the conversation's.
	// An Engine gets them too, each run's spec encoded with the run's (the
	// Temporal workflow's input: its workers find the transcripts and
	// rebuild the history where the tools are).
	Conversation []Turn `json:",omitempty"`
	// Listed is the run as its runner accepted it (its creation time,
	// workspace, task line and conversation), which an Engine with an
	// index keeps for the other runners (EngineIndex). It is not part of
	// the run, and not encoded with it.
	Listed *gen.Run `json:"-"`
}

// KeepsTranscript reports whether the run keeps a transcript: the
// request's transcript, or the spec's default when it has none.
func (sp *Spec) KeepsTranscript() bool {
	if sp.Transcript == nil {
		return gen.DefaultCreateRunRequestTranscript
	}
	return *sp.Transcript
}

// Options returns the loop's options that the spec alone decides: the
// budgets, the caps of what the model sees of a tool's output, the run id,
// the raw record and the approval policy. It is deterministic, so the
// Temporal workflow builds its options with it too (adding its
// activity-backed tools, check, trace and approver); Open adds the spec's
// Approver, bounded by its timeout.
func (sp *Spec) Options() agent.Options {
	opts := agent.Options{
		MaxSteps:            agent.DefaultMaxSteps,
		TokenBudget:         deref(sp.TokenBudget),
		MaxObservationBytes: deref(sp.MaxObservationBytes),
		MaxObservationLines: deref(sp.MaxObservationLines),
		RunID:               sp.ID,
		RecordRaw:           sp.RecordRaw,
		Observer:            sp.Observer,
		Live:                sp.Live,
		FollowUp:            sp.FollowUp,
	}
	if sp.MaxSteps != nil {
		opts.MaxSteps = *sp.MaxSteps
	}
	// A provider model's run gets budgets that real tasks fit; a script
	// model keeps the seed's.
	if provider, _ := sp.Model.Discriminator(); provider == string(gen.OpenAIModelConfigProviderOpenai) || provider == string(gen.AnthropicModelConfigProviderAnthropic) {
		if sp.MaxSteps == nil {
			opts.MaxSteps = gen.ProviderDefaultCreateRunRequestMaxSteps
		}
		if sp.TokenBudget == nil {
			opts.TokenBudget = gen.ProviderDefaultCreateRunRequestTokenBudget
		}
	}
	if opts.TokenBudget == gen.MaxCreateRunRequestTokenBudget {
		opts.TokenBudget = 0 // the most there is: no limit
	}
	if p := sp.ApprovalPolicy; p != nil && *p != gen.ApprovalPolicyNever {
		opts.ApprovalPolicy = *p
	}
	return opts
}

// Asked is what the run is asked, which its transcript starts with: the
// task's prompt, or a follow-up's message.
func (sp *Spec) Asked() string {
	if sp.FollowUp != nil {
		return sp.FollowUp.Message
	}
	return sp.Task.Prompt
}

// CheckCommand is the completion check's command line; "" means none.
func (sp *Spec) CheckCommand() string { return deref(sp.Check) }

// MCPNames are the names of the run's MCP servers.
func (sp *Spec) MCPNames() []string { return deref(sp.McpServers) }

// Open sets run sp up on a host: host says where and how the run works
// there (Root or Dir, commands, custom tools, sandbox, check timeout and
// environment, telemetry, where its trace and transcript go, and in
// MCPServers the MCP servers a run may name); sp says what this run does
// (its check and MCP servers, whether it keeps its transcript, and
// through Options its budgets and approvals), and its project docs
// become its task's instructions
// (ProjectDocs). Setup.Options is ready for agent.Run. It is the one place a
// spec becomes a run: `specloop run` and `demo`, the runner and the
// Temporal workers all call it. A failure is a *wiring.Error naming the
// part that failed, or an *Error naming the MCP server the host lacks.
func Open(ctx context.Context, sp *Spec, host wiring.Config) (*wiring.Setup, error) {
	cfg := host
	cfg.Check = sp.CheckCommand()
	if !sp.KeepsTranscript() {
		cfg.TranscriptPath = ""
	}
	servers, err := pickMCP(sp.MCPNames(), host.MCPServers)
	if err != nil {
		return nil, err
	}
	cfg.MCPServers = servers
	setup, err := wiring.OpenContext(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := sp.Options()
	opts.Tools, opts.Check, opts.Trace = setup.Options.Tools, setup.Options.Check, setup.Options.Trace
	if opts.ApprovalPolicy != "" && sp.Approver != nil {
		opts.Approver = agent.WithApprovalTimeout(sp.Approver, sp.ApprovalTimeout)
	}
	if setup.Transcript != nil {
		record, watch := transcript.NewRecorder(setup.Transcript, sp.Asked()).Observe, opts.Observer
		opts.Observer = record
		if watch != nil {
			opts.Observer = func(p agent.Progress) { record(p); watch(p) }
		}
	}
	if f := sp.FollowUp; f != nil && f.History == nil && len(sp.Conversation) > 0 {
		task, h, err := History(ctx, sp.Conversation, opts)
		if err != nil {
			setup.Close()
			return nil, fmt.Errorf("rebuild the conversation's history: %w", err)
		}
		sp.Task, opts.FollowUp = task, &agent.FollowUp{History: h, Message: f.Message}
	}
	sp.Task, opts.ProjectDocs, err = ProjectDocs(&sp.CreateRunRequest, setup.Workspace.Dir(), cfg.Root)
	if err != nil {
		setup.Close()
		return nil, fmt.Errorf("read the project docs: %w", err)
	}
	setup.Options = opts
	return setup, nil
}

// pickMCP returns the servers among available that names names, in its
// order; a name twice or one available lacks is an Invalid Error naming
// it. A run only ever chooses among the servers its host was configured
// with.
func pickMCP(names []string, available []mcpclient.Server) ([]mcpclient.Server, error) {
	var out []mcpclient.Server
	for i, name := range names {
		field := fmt.Sprintf("/mcp_servers/%d", i)
		if slices.Index(names[:i], name) >= 0 {
			return nil, badField(field, "the MCP server %q is named twice", textclip.Clip(name, 64))
		}
		j := slices.IndexFunc(available, func(s mcpclient.Server) bool { return s.Name == name })
		if j < 0 {
			return nil, badField(field, "unknown MCP server %q; this server is configured with: %s", textclip.Clip(name, 64), mcpNames(available))
		}
		out = append(out, available[j])
	}
	return out, nil
}

// mcpNames lists the servers' names, for messages.
func mcpNames(servers []mcpclient.Server) string {
	if len(servers) == 0 {
		return "none (serve --mcp NAME=... configures them)"
	}
	names := make([]string, len(servers))
	for i, srv := range servers {
		names[i] = srv.Name
	}
	return strings.Join(names, ", ")
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
