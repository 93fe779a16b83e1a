package adapt

import (
	"strconv"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
)

// Kind is what a Turn is.
type Kind int

// The kinds of turns.
const (
	// Call is the assistant calling one tool: ID, Name, Arguments.
	Call Kind = iota
	// Result is a tool's result for the call ID: Text, IsError.
	Result
	// User is a user message: Text.
	User
)

// Turn is one history entry as every provider understands it. A provider
// maps Call to an assistant tool call, Result to the tool result tied to the
// same ID, and User to a user message.
type Turn struct {
	Kind      Kind
	ID        string
	Name      string
	Arguments map[string]any
	// Text is a Result's or a User turn's text, and for a Call what the
	// model wrote beside it (the first call of a turn has it).
	Text    string
	IsError bool
	// Reasoning are a Call's reasoning blocks, which the provider requires
	// back unchanged before it (the first call of a turn has them).
	Reasoning []gen.ReasoningBlock
}

// errorPrefix starts the text of every failed tool result, so a model sees a
// failure even where the provider has no error flag.
const errorPrefix = "ERROR"

// ErrorText is how a failed observation reads to a model: "ERROR: content",
// or "ERROR (code): content" when the observation has an error code.
func ErrorText(obs *gen.Observation) string {
	if obs.ErrorCode != nil && *obs.ErrorCode != "" {
		return errorPrefix + " (" + string(*obs.ErrorCode) + "): " + obs.Content
	}
	return errorPrefix + ": " + obs.Content
}

// missingResult answers a call whose result the history does not hold, so
// every call a provider sees is answered.
const missingResult = errorPrefix + ": no result was recorded for this call."

// finishDelivered answers the finish of a run that a person's message
// continues.
const finishDelivered = "Your answer was given to the person, whose reply follows."

// SyntheticID is the call id used for a history call that has none: stable
// for the item's position, so the call and its result always agree.
func SyntheticID(index int) string { return "call_" + strconv.Itoa(index) }

// validID reports whether id is safe for every provider (Anthropic
// requires ^[a-zA-Z0-9_-]+$ for tool_use ids).
func validID(id string) bool { return ident.Of(id, 256, "_-") }

// Render turns a run's history into turns:
//
//   - a ToolCall becomes a Call with its call_id (or SyntheticID of its
//     position when it has none or one a provider would reject);
//   - a model turn is its actions in a row, followed by their results in
//     the same order: each Observation becomes the Result of the oldest
//     call not answered yet, its text marked by ErrorText when it failed;
//   - a Finish becomes a Call of the finish tool; when the completion check
//     rejected it, the rejection feedback answers it as a failed Result;
//   - any other feedback (invalid model output) becomes a User message that
//     says what was wrong;
//   - a UserMessage (a person's follow-up) becomes a User message of its
//     text, the finish it follows answered by finishDelivered.
//
// A call the history never answers gets a failed Result (before the next
// call, or at the end), so the rendered conversation is always well formed,
// and a provider groups consecutive Calls into one assistant reply.
func (ts *Toolset) Render(h agent.History) []Turn {
	turns := make([]Turn, 0, h.Len()+1)
	var pending []int // indexes in turns of calls still waiting for their results, oldest first
	answer := func(text string, isError bool) {
		c := turns[pending[0]]
		turns = append(turns, Turn{Kind: Result, ID: c.ID, Name: c.Name, Text: text, IsError: isError})
		pending = pending[1:]
	}
	// unanswered answers the calls still waiting as having no result.
	unanswered := func() {
		for len(pending) > 0 {
			answer(missingResult, true)
		}
	}
	answering := false // a result was rendered since the last call
	for i, it := range h.All() {
		isCall := it.ToolCall != nil || it.Finish != nil
		if isCall && answering {
			// A new turn: whatever the last one left unanswered stays so.
			unanswered()
		}
		answering = !isCall
		switch {
		case it.ToolCall != nil:
			id := SyntheticID(i)
			if it.ToolCall.CallId != nil && validID(*it.ToolCall.CallId) {
				id = *it.ToolCall.CallId
			}
			turns = append(turns, Turn{Kind: Call, ID: id, Name: it.ToolCall.ToolName, Arguments: it.ToolCall.Arguments, Reasoning: deref(it.ToolCall.Reasoning), Text: deref(it.ToolCall.Text)})
			pending = append(pending, len(turns)-1)
		case it.Finish != nil:
			turns = append(turns, Turn{Kind: Call, ID: SyntheticID(i), Name: ts.Finish, Arguments: ts.FinishArguments(it.Finish), Reasoning: deref(it.Finish.Reasoning), Text: deref(it.Finish.Text)})
			pending = append(pending, len(turns)-1)
		case it.Observation != nil:
			obs := it.Observation
			text := obs.Content
			if obs.IsError {
				text = ErrorText(obs)
			}
			if len(pending) > 0 {
				answer(text, obs.IsError)
				continue
			}
			turns = append(turns, Turn{Kind: User, Text: "Result of " + obs.ToolName + ": " + text})
		case it.Feedback != nil:
			fb := it.Feedback
			if fb.Kind == gen.FeedbackKindFinishRejected && len(pending) > 0 {
				// The runtime's verdict on the finish call that waits.
				answer(errorPrefix+": "+fb.Message, true)
				continue
			}
			unanswered()
			turns = append(turns, Turn{Kind: User, Text: FeedbackText(ts.Finish, fb)})
		case it.UserMessage != nil:
			// The person's reply to the run that ended: its finish
			// reached them.
			for len(pending) > 0 {
				if turns[pending[0]].Name == ts.Finish {
					answer(finishDelivered, false)
				} else {
					answer(missingResult, true)
				}
			}
			turns = append(turns, Turn{Kind: User, Text: it.UserMessage.Text})
		}
	}
	unanswered()
	return turns
}

// FeedbackText is how feedback reads to a model: invalid output (and a
// rejected finish with no call to answer) says what was wrong and what to do;
// a stuck warning and a history summary are the loop's own words to the
// model, as they are.
func FeedbackText(finish string, fb *gen.ModelFeedback) string {
	switch fb.Kind {
	case gen.FeedbackKindStuckWarning, gen.FeedbackKindHistorySummary:
		return fb.Message
	}
	return "Your last reply was not a valid action (" + string(fb.Kind) + "): " + fb.Message +
		"\nCall one of the tools with valid JSON arguments, or call " + finish + " with your final answer."
}

// FinishArguments is a Finish as the finish tool's arguments: the Finish's
// wire form without the discriminator.
func (ts *Toolset) FinishArguments(f *gen.Finish) map[string]any {
	m, err := jsonCopy(f)
	if err != nil {
		return map[string]any{}
	}
	delete(m, ts.discriminator)
	for _, k := range ts.adapterSet {
		delete(m, k)
	}
	return m
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
