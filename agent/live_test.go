package agent_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// streamingModel streams its text in two pieces before each turn, as an
// adapter over a streaming API does.
type streamingModel struct{ sawOnText []bool }

func (m *streamingModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	m.sawOnText = append(m.sawOnText, req.OnText != nil)
	if req.OnText != nil {
		req.OnText("I will ")
		req.OnText("finish.")
	}
	return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "done"}}}}, nil
}

// Options.Live hears that a step's model call started and then each piece
// of the model's text, in order, before the step's event; without Live
// the model is not asked to stream.
func TestLiveHearsTheModelCallAndItsText(t *testing.T) {
	var got []string
	m := &streamingModel{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "p"}, m, agent.Options{
		Live: func(l agent.Live) {
			if l.Text == "" {
				got = append(got, "call of step "+string(rune('0'+l.Step)))
				return
			}
			got = append(got, l.Text)
		},
		Observer: func(p agent.Progress) { got = append(got, string(p.Event.EventType)) },
	})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v, %v", res, err)
	}
	want := []string{"run_started", "call of step 1", "I will ", "finish.", "model_action", "run_finished"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what Live and the Observer heard (-want +got):\n%s", diff)
	}
	m2 := &streamingModel{}
	if _, err := agent.Run(context.Background(), gen.Task{Prompt: "p"}, m2, agent.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(m2.sawOnText) != 1 || m2.sawOnText[0] {
		t.Errorf("without Live the request had OnText: %v", m2.sawOnText)
	}
}
