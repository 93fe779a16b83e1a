package openai_test

import (
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model/modeltest"
)

// TestStream: the reply as OpenAI streams it, chat.completion.chunk
// events whose text and tool-call parts (tied by index) are assembled in
// order, the usage in a last chunk without choices, then [DONE].
func TestStream(t *testing.T) {
	t.Parallel()
	modeltest.RunStream(t, provider, modeltest.Stream{
		Body:   modeltest.Testdata(t, "stream_parallel_tool_calls.sse"),
		Deltas: []string{"I'll multiply", " and subtract."},
		Check: func(t *testing.T, turn agent.Turn) {
			if len(turn.Actions) != 2 || turn.Usage == nil || turn.Usage.InputTokens != 82 || turn.Usage.OutputTokens != 40 {
				t.Fatalf("turn = %+v, want 2 calls and the usage", turn)
			}
			first, second := turn.Actions[0].ToolCall, turn.Actions[1].ToolCall
			if first == nil || *first.CallId != "call_first1" || first.Text == nil || *first.Text != "I'll multiply and subtract." ||
				second == nil || *second.CallId != "call_second2" {
				t.Fatalf("calls = %+v, %+v", first, second)
			}
			modeltest.JSONEqual(t, "first call", turn.Actions[0].Raw, `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"call_first1"}`)
			modeltest.JSONEqual(t, "second call", turn.Actions[1].Raw, `{"type":"tool_call","tool_name":"calculator","arguments":{"left":84,"operation":"subtract","right":80},"call_id":"call_second2"}`)
		},
		ErrorEvent: []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"I'll\"},\"finish_reason\":null}]}\n\n" +
			"data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"),
	})
}
