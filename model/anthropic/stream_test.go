package anthropic_test

import (
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model/modeltest"
)

// TestStream: the reply as the Messages API streams it, message_start,
// then each content block's content_block_start, deltas (thinking and
// signature, text, input_json) and content_block_stop, message_delta with
// the stop reason and the output usage, message_stop; pings between.
func TestStream(t *testing.T) {
	t.Parallel()
	modeltest.RunStream(t, provider, modeltest.Stream{
		Body:   modeltest.Testdata(t, "stream_tool_use.sse"),
		Deltas: []string{"I'll multiply", " 12 by 7."},
		Check: func(t *testing.T, turn agent.Turn) {
			if len(turn.Actions) != 2 || turn.Usage == nil || turn.Usage.InputTokens != 472+40 || turn.Usage.OutputTokens != 91 {
				t.Fatalf("turn = %+v, want 2 calls and the usage, cache reads counted", turn)
			}
			first := turn.Actions[0].ToolCall
			if first == nil || first.Text == nil || *first.Text != "I'll multiply 12 by 7." || first.Reasoning == nil || len(*first.Reasoning) != 1 {
				t.Fatalf("first call = %+v", first)
			}
			if r := (*first.Reasoning)[0]; *r.Thinking != "12 x 7 is a product; use the calculator." || *r.Signature != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" {
				t.Fatalf("thinking block = %q, %q", *r.Thinking, *r.Signature)
			}
			modeltest.JSONEqual(t, "first call", turn.Actions[0].Raw, `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"toolu_01A09q90qw90lq917835lq9"}`)
			// A tool_use without input deltas has content_block_start's input.
			modeltest.JSONEqual(t, "second call", turn.Actions[1].Raw, `{"type":"tool_call","tool_name":"calculator","arguments":{},"call_id":"toolu_02NoInput0000000000"}`)
		},
		ErrorEvent: []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":472,\"output_tokens\":1}}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"),
	})
}
