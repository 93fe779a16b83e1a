package adapt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// ReplyCall is one tool call in a provider's reply.
type ReplyCall struct {
	ID   string
	Name string
	// Arguments is the arguments' JSON text as the provider sent it.
	Arguments string
}

// Reply is a provider's response, reduced to what decides the action.
type Reply struct {
	// Calls are the tool calls, in the order the model made them.
	Calls []ReplyCall
	// Text is the reply's text (its content blocks joined).
	Text string
	// Refusal is set when the model or the provider refused to answer; Raw
	// text for the trace when there is any.
	Refusal    bool
	RefusalRaw string
	// Truncated is set when the reply stopped at the output token limit.
	Truncated bool
	// Reasoning are the reasoning blocks the provider requires back
	// unchanged; the turn's first action carries them.
	Reasoning []gen.ReasoningBlock
	// Usage is the call's token usage, when the provider reported it.
	Usage *gen.Usage
}

// Turn turns a reply into the turn it asks for: its actions in order,
// each with Raw set to its wire form (so ParseAction(Raw) gives the same
// action back), and the reply's usage.
//
// A reply with tool calls yields one action per call: a call of the finish
// tool is a Finish, any other a ToolCall; the first action carries the
// reply's reasoning blocks and its text (not in Raw: the reasoning is
// never recorded, the text has its own summary in the trace).
// Everything else is an *agent.InvalidOutputError carrying the usage and
// telling the model what to do instead: a reply with text and no call (only
// calls are acted on), arguments that are not a JSON object, a tool that does
// not exist, a finish call followed by other calls, more calls than a turn
// holds (agent.MaxTurnActions), a refusal, a reply cut off at the token
// limit (with or without calls), or an empty reply. One bad call makes the
// whole reply invalid, so the model retries it as a whole; arguments that
// are an object but break the tool's schema are the tool runtime's to
// reject, as an error Observation of that call alone.
func (ts *Toolset) Turn(r Reply) (agent.Turn, error) {
	invalid := func(raw, format string, args ...any) *agent.InvalidOutputError {
		return &agent.InvalidOutputError{Message: fmt.Sprintf(format, args...), Raw: raw, Usage: r.Usage}
	}
	switch {
	case r.Refusal:
		return agent.Turn{}, invalid(r.RefusalRaw, "the model refused to answer; if the task cannot be done, call %s and say why, otherwise call a tool", ts.Finish)
	case r.Truncated && len(r.Calls) > 0:
		return agent.Turn{}, invalid("", "the reply stopped at the output token limit in the middle of a tool call, so no call of it was run; make smaller calls (write a large file in parts, or edit it instead of rewriting it)")
	case r.Truncated:
		return agent.Turn{}, invalid(r.Text, "the reply stopped at the output token limit before it was complete; reply more briefly, with a tool call")
	case len(r.Calls) == 0 && strings.TrimSpace(r.Text) == "":
		return agent.Turn{}, invalid(r.Text, "the reply has neither a tool call nor text; call a tool, or %s with your answer", ts.Finish)
	case len(r.Calls) == 0:
		e := invalid(r.Text, "the reply has text but no tool call, and only tool calls are acted on; call a tool to go on, or call %s with your final answer as its argument", ts.Finish)
		e.Text = r.Text // in a follow-up run, the model's message to the person
		return agent.Turn{}, e
	}
	if n, most := len(r.Calls), agent.MaxTurnActions; n > most {
		return agent.Turn{}, invalid("", "the reply has %d tool calls, more than the %d a reply may hold; make fewer calls at once", n, most)
	}
	actions := make([]agent.Action, 0, len(r.Calls))
	for i, c := range r.Calls {
		n := i + 1
		if !ts.names[c.Name] {
			return agent.Turn{}, invalid(c.Name, "tool call %d names a tool that does not exist; the tools are: %s", n, ts.list)
		}
		if c.Name == ts.Finish && n < len(r.Calls) {
			return agent.Turn{}, invalid(c.Name, "tool call %d calls %s before other calls; call %s last, after the calls it needs", n, ts.Finish, ts.Finish)
		}
		args, err := decodeArguments(c.Arguments)
		if err != nil {
			return agent.Turn{}, invalid(c.Arguments, "tool call %d (%s): the arguments are not a JSON object: %v", n, c.Name, err)
		}
		call := &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: c.Name, Arguments: args}
		if c.ID != "" {
			call.CallId = &c.ID
		}
		var v any = call
		what := ""
		if c.Name == ts.Finish {
			for _, k := range ts.adapterSet { // the adapter's to set, not the model's
				delete(args, k)
			}
			args[ts.discriminator] = string(gen.FinishTypeFinish)
			v, what = args, "the arguments do not match its schema: "
		}
		a, err := wire(v)
		var inv *agent.InvalidOutputError
		if errors.As(err, &inv) {
			return agent.Turn{}, invalid(c.Arguments, "tool call %d (%s): %s%s", n, c.Name, what, inv.Message)
		}
		if err != nil {
			return agent.Turn{}, err
		}
		actions = append(actions, a)
	}
	// What the model wrote beside its calls, kept with the turn's first
	// action to send back and to show, and the reasoning blocks, added
	// after validation: the model never writes them, the adapter keeps
	// them to send back.
	text, blocks := &r.Text, &r.Reasoning
	if strings.TrimSpace(r.Text) == "" {
		text = nil
	}
	if len(r.Reasoning) == 0 {
		blocks = nil
	} else {
		*blocks = slices.Clone(r.Reasoning)
	}
	switch a := &actions[0]; {
	case a.ToolCall != nil:
		a.ToolCall.Text, a.ToolCall.Reasoning = text, blocks
	case a.Finish != nil:
		a.Finish.Text, a.Finish.Reasoning = text, blocks
	}
	return agent.Turn{Actions: actions, Usage: r.Usage}, nil
}

// OrEmpty is a call's arguments as a provider is sent them: an object,
// empty for none.
func OrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// decodeArguments parses a call's arguments strictly; empty arguments are an
// empty object (some servers send "" for a call without parameters).
func decodeArguments(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	v, err := schema.Decode([]byte(text))
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the value is not an object")
	}
	return m, nil
}

// wire marshals v (a gen.ToolCall or an Action-shaped map) and parses it
// back with the JSON adapter, so the action is validated against the spec
// and Raw is exactly what a replay will parse.
func wire(v any) (agent.Action, error) {
	data, err := Marshal(v)
	if err != nil {
		return agent.Action{}, fmt.Errorf("adapt: encode action: %w", err)
	}
	return ParseAction(string(data))
}

// Marshal encodes v as JSON the way the providers' SDKs did and the
// traces record actions: map keys sorted, no HTML escaping, no newline at
// the end.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}
