package server_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// streamingModel streams its text in two pieces, then waits for release
// before it finishes.
type streamingModel struct{ release chan struct{} }

func (m streamingModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	req.OnText("I will ")
	req.OnText("finish.")
	select {
	case <-m.release:
	case <-ctx.Done():
		return agent.Turn{}, ctx.Err()
	}
	text := "I will finish."
	return agent.Turn{Actions: []agent.Action{{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "done", Text: &text}}}}, nil
}

// A stream with content carries the model's text as it streams in, as
// delta events without an id, while the step is in flight; a plain stream
// has none; the stream validates against the spec.
func TestContentStreamCarriesTheModelsText(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: func(gen.ModelConfig) (agent.Model, error) {
		return streamingModel{release: release}, nil
	}}})
	run := ts.create(blockRequest("stream your text"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	on, err := ts.raw.GetRunEvents(ctx, run.Id, &gen.GetRunEventsParams{Content: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer on.Body.Close()
	off, err := ts.raw.GetRunEvents(ctx, run.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Body.Close()

	// The deltas arrive while the model still thinks.
	var body strings.Builder
	r := bufio.NewReader(on.Body)
	var got string
	for got != "I will finish." {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the text arrived (%v):\n%s", err, body.String())
		}
		body.WriteString(line)
		if d, ok := strings.CutPrefix(line, `data: {"step":1,"text":"`); ok {
			got += strings.TrimSuffix(strings.TrimSpace(d), `"}`)
		}
	}
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	body.Write(rest)
	if !strings.Contains(body.String(), "event: "+runner.DeltaEvent+"\n") {
		t.Fatalf("no delta event:\n%s", body.String())
	}
	if _, err := contract.ValidateEventStream([]byte(body.String())); err != nil {
		t.Fatalf("the stream with deltas does not validate: %v\n%s", err, body.String())
	}
	plain, err := io.ReadAll(off.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), runner.DeltaEvent) || strings.Contains(string(plain), "I will ") {
		t.Fatalf("a plain stream has the text:\n%s", plain)
	}
}
