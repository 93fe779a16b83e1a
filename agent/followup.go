package agent

import (
	"encoding/json"

	"github.com/specloop/specloop/gen"
)

// Follow-up runs, the turns of a conversation. A run that ended can be
// continued by a person's message: the next run (Options.FollowUp) starts
// from the history the ended run finished with, the message appended as a
// UserMessage item, and is a run of its own — its own id, trace,
// run_started, step budget counted from 1, usage and duration. That is
// what sets it apart from Options.Resume, which goes on with the same run.
// Approvals given for the run (approve_for_run) and loop detection start
// afresh, and a long history is compacted before the first request like
// any other (Compaction).
//
// In a follow-up run a reply with text and no action at all (an
// InvalidOutputError whose Text is set) is the model's message to the
// person: it ends the turn as a Finish whose answer is that text, with the
// completion gate applying as to any Finish (with a check, the run ends
// finished only once the check passes; a failing check is fed back and the
// model works on). In a one-shot run the same reply stays invalid output
// fed back to the model: only actions are acted on there.

// FollowUp is what a follow-up run continues: the conversation so far and
// the person's message.
type FollowUp struct {
	// History is the history the continued run ended with, as the model
	// saw it.
	History []Item
	// Message is the person's message, the run's first new item; the
	// trace's run_started summarizes it as the run's input.
	Message string
}

// textOnly returns the Finish a follow-up run makes of a text-only reply,
// or nil when the reply is invalid output to feed back.
func (l *loop) textOnly(invalid *InvalidOutputError) *Turn {
	if l.opts.FollowUp == nil || invalid.Text == "" {
		return nil
	}
	fin := &gen.Finish{Type: gen.FinishTypeFinish, Answer: invalid.Text}
	raw, _ := json.Marshal(fin) // the finish's wire form, as a replay parses it
	return &Turn{Actions: []Action{{Finish: fin, Raw: string(raw)}}, Usage: invalid.Usage}
}
