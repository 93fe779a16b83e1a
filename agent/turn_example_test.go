package agent_test

import (
	"context"
	"fmt"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// parallelModel asks for two calculations in its first reply and finishes
// with their results in its second, as a model with parallel tool calls
// does.
type parallelModel struct{}

func (parallelModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	h := req.History
	calc := func(id string, left, right float64) agent.Action {
		return agent.Action{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", CallId: &id,
			Arguments: map[string]any{"left": left, "operation": "multiply", "right": right}}}
	}
	if h.Len() == 0 {
		return agent.Turn{Actions: []agent.Action{calc("a", 12, 7), calc("b", 6, 7)}}, nil
	}
	// The history holds the turn's calls, then their observations in order.
	answer := h.At(2).Observation.Content + " and " + h.At(3).Observation.Content
	return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: answer}}}}, nil
}

// A model whose replies hold several tool calls returns them as one Turn:
// each reply is one step, whose calls run in order, each observation tied to
// its call's id.
func ExampleTurn() {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "Compute 12 x 7 and 6 x 7."}, parallelModel{}, agent.Options{
		Tools: rt,
		Observer: func(p agent.Progress) {
			if o := p.Observation; o != nil {
				fmt.Printf("step %d: call %s -> %s\n", p.Event.Step, *o.CallId, o.Content)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s in %d steps: %s\n", res.ExitReason, res.StepsUsed, *res.Answer)
	// Output:
	// step 1: call a -> 84
	// step 1: call b -> 42
	// finished in 2 steps: 84 and 42
}
