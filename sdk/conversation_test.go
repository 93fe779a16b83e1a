package sdk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// A three-message conversation through the SDK: a run and two Continues,
// each with a model of its own (WithModel) and the second with its own
// step budget (WithMaxSteps); Conversation lists the three in order.
func TestContinue(t *testing.T) {
	t.Parallel()
	c, err := sdk.New(newServer(t, server.Config{}), sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "Compute 12 x 7."}, Model: sdk.Script(calc...)})
	if err != nil {
		t.Fatal(err)
	}
	first := run.Id
	answers := []string{"12 * 7 = 84, and 84 > 80."}
	for _, next := range []struct {
		message, answer string
		opts            []sdk.ContinueOption
	}{
		{"Now add one.", "85", []sdk.ContinueOption{sdk.WithModel(sdk.Script(`{"type":"finish","answer":"85"}`))}},
		{"Double it.", "170", []sdk.ContinueOption{sdk.WithMaxSteps(2), sdk.WithModel(sdk.Script(calc[0], `{"type":"finish","answer":"170"}`))}},
	} {
		if _, err := c.Wait(ctx, run.Id); err != nil {
			t.Fatal(err)
		}
		if run, err = c.Continue(ctx, run.Id, next.message, next.opts...); err != nil {
			t.Fatalf("Continue(%q): %v", next.message, err)
		}
		answers = append(answers, next.answer)
	}
	if _, err := c.Wait(ctx, run.Id); err != nil {
		t.Fatal(err)
	}
	conv, err := c.Conversation(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Runs) != 3 || conv.Id != first {
		t.Fatalf("conversation %s has %d runs, want 3", conv.Id, len(conv.Runs))
	}
	for i, r := range conv.Runs {
		if r.Result == nil || r.Result.Answer == nil || *r.Result.Answer != answers[i] || r.ConversationId != first {
			t.Errorf("run %d of the conversation: %+v, want the answer %q", i+1, r.Result, answers[i])
		}
	}
	if _, err := c.Conversation(ctx, conv.Runs[1].Id); !errors.Is(err, sdk.ErrNotFound) {
		t.Errorf("a conversation by its second run's id: %v, want ErrNotFound", err)
	}
}
