package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
)

// A run of a scripted model with the calculator: the model calls the tool,
// the loop validates the call against the spec and runs it, and the model
// finishes with the answer.
func ExampleRun() {
	rt, err := tools.New(tools.Config{}) // the calculator only: no workspace
	if err != nil {
		log.Fatal(err)
	}
	m := model.NewScript( // raw model responses, one per step
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`{"type":"finish","answer":"12 * 7 = 84"}`,
	)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "Compute 12 x 7."}, m, agent.Options{
		MaxSteps: 5,
		Tools:    rt,
		Observer: func(p agent.Progress) {
			if p.Event.EventType == gen.TraceEventTypeObservation {
				fmt.Println("observation:", *p.Event.ToolName, *p.Event.IsError)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ExitReason, "after", res.StepsUsed, "steps:", *res.Answer)
	// Output:
	// observation: calculator false
	// finished after 2 steps: 12 * 7 = 84
}

// adder is a custom one-action model: it asks the calculator for the sum
// of two numbers, then answers with the value the tool returned, or gives
// up on an error. A real model would send the request (the task, the
// history and the tools) to a provider.
type adder struct{ left, right float64 }

func (a adder) act(_ context.Context, req *agent.Request) (agent.Action, error) {
	h := req.History
	if h.Len() == 0 {
		return agent.Action{ToolCall: &gen.ToolCall{
			Type:      gen.ToolCallTypeToolCall,
			ToolName:  "calculator",
			Arguments: map[string]any{"left": a.left, "operation": "add", "right": a.right},
		}}, nil
	}
	last := h.At(h.Len() - 1)
	answer := "the calculator failed"
	if obs := last.Observation; obs != nil && !obs.IsError && obs.Data != nil {
		answer = fmt.Sprint((*obs.Data)["value"])
	}
	return agent.Action{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: answer}}, nil
}

// Any type with a Next method is a model; a function that proposes one
// action per call is one through agent.OneAction: here one that decides
// from the history what to do next.
func ExampleOneAction() {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		log.Fatal(err)
	}
	answer, err := agent.Answer(context.Background(), "What is 2 + 40?", agent.OneAction(adder{2, 40}.act), agent.Options{Tools: rt})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)
	// Output:
	// 42
}
