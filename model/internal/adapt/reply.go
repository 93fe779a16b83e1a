package adapt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/model"
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
	// Usage is the call's token usage, when the provider reported it.
	Usage *gen.Usage
}

// Actions turns a reply into the actions it asks for, in order, each with
// Raw set to its wire form (so ParseAction(Raw) gives the same action back);
// the first carries the reply's usage.
//
// A reply with tool calls yields one action per call: a call of the finish
// tool is a Finish, any other a ToolCall. A reply with text and no calls is a
// Finish with that text. Everything else is an *agent.InvalidOutputError
// carrying the usage: arguments that are not a JSON object, a tool that does
// not exist, a refusal, a reply cut off at the token limit, or a reply with
// neither calls nor text. One bad call makes the whole reply invalid, so the
// model retries it as a whole.
func (ts *Toolset) Actions(r Reply) ([]agent.Action, error) {
	invalid := func(raw, format string, args ...any) error {
		return &agent.InvalidOutputError{Message: fmt.Sprintf(format, args...), Raw: raw, Usage: r.Usage}
	}
	if len(r.Calls) == 0 {
		switch {
		case r.Refusal:
			return nil, invalid(r.RefusalRaw, "the model refused to answer; call a tool or %s with your answer", ts.Finish)
		case r.Truncated:
			return nil, invalid(r.Text, "the reply stopped at the output token limit before it was complete; reply more briefly")
		case strings.TrimSpace(r.Text) == "":
			return nil, invalid(r.Text, "the reply has neither a tool call nor text; call a tool or %s with your answer", ts.Finish)
		}
		a, err := wire(&gen.Finish{Type: gen.FinishTypeFinish, Answer: r.Text})
		if err != nil {
			return nil, err
		}
		a.Usage = r.Usage
		return []agent.Action{a}, nil
	}
	actions := make([]agent.Action, 0, len(r.Calls))
	for i, c := range r.Calls {
		n := i + 1
		if !ts.Has(c.Name) {
			return nil, invalid(c.Name, "tool call %d names a tool that does not exist; the tools are: %s", n, ts.list)
		}
		args, err := decodeArguments(c.Arguments)
		if err != nil {
			return nil, invalid(c.Arguments, "tool call %d (%s): the arguments are not a JSON object: %v", n, c.Name, err)
		}
		var a agent.Action
		if c.Name == ts.Finish {
			args[ts.discriminator] = string(gen.FinishTypeFinish)
			a, err = wire(args)
			if err != nil {
				var inv *agent.InvalidOutputError
				if asInvalid(err, &inv) {
					return nil, invalid(c.Arguments, "tool call %d (%s): the arguments do not match its schema: %s", n, c.Name, inv.Message)
				}
				return nil, err
			}
		} else {
			call := &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: c.Name, Arguments: args}
			if c.ID != "" {
				call.CallId = &c.ID
			}
			if a, err = wire(call); err != nil {
				var inv *agent.InvalidOutputError
				if asInvalid(err, &inv) {
					return nil, invalid(c.Arguments, "tool call %d (%s): %s", n, c.Name, inv.Message)
				}
				return nil, err
			}
		}
		actions = append(actions, a)
	}
	actions[0].Usage = r.Usage
	return actions, nil
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

// wire marshals v (a gen.ToolCall, gen.Finish or an Action-shaped map) and
// parses it back with the JSON adapter, so the action is validated against
// the spec and Raw is exactly what a replay will parse.
func wire(v any) (agent.Action, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return agent.Action{}, fmt.Errorf("adapt: encode action: %w", err)
	}
	return model.ParseAction(string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
}

func asInvalid(err error, target **agent.InvalidOutputError) bool {
	inv, ok := err.(*agent.InvalidOutputError)
	if ok {
		*target = inv
	}
	return ok
}
