package model_test

import (
	"context"
	"errors"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/modeltest"
)

func TestScriptOrderRecordingAndExhaustion(t *testing.T) {
	s := model.NewScript(`{"type":"finish","answer":"one"}`, "bad", `{"type":"finish","answer":"three"}`)
	ctx := context.Background()
	task := gen.Task{Prompt: "p"}
	h1 := agent.NewHistory()
	h2 := agent.NewHistory(agent.Item{Finish: &gen.Finish{Type: "finish", Answer: "one"}})

	a, err := modeltest.Ask(t, ctx, s, task, h1)
	if err != nil || a.Finish.Answer != "one" {
		t.Fatalf("first: %+v %v", a, err)
	}
	if _, err := modeltest.Ask(t, ctx, s, task, h2); !agent.IsInvalidOutput(err) {
		t.Fatalf("second must be invalid output, got %v", err)
	}
	if a, err = modeltest.Ask(t, ctx, s, task, h2); err != nil || a.Finish.Answer != "three" {
		t.Fatalf("third: %+v %v", a, err)
	}
	if _, err := modeltest.Ask(t, ctx, s, task, h2); !errors.Is(err, model.ErrExhausted) {
		t.Fatalf("fourth: %v, want ErrExhausted", err)
	}
	calls := s.Calls()
	if len(calls) != 4 || calls[0].History.Len() != 0 || calls[1].History.Len() != 1 || calls[0].Task != task {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestScriptHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := model.NewScript(`{"type":"finish","answer":"x"}`).Next(ctx, &agent.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
