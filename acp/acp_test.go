package acp

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// A unified diff's hunks give the editor the old and the new text around
// the change; the file headers are no part of either.
func TestHunks(t *testing.T) {
	diff := "--- a/f.go\n+++ b/f.go\n@@ -1,3 +1,3 @@\n package f\n-var x = 1\n+var x = 2\n \n"
	old, now := hunks(diff)
	if old != "package f\nvar x = 1\n\n" || now != "package f\nvar x = 2\n\n" {
		t.Errorf("old %q, new %q", old, now)
	}
}

// The filter passes JSON-RPC messages through and answers every other
// line itself, with the line's id when it has one.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		line, id string
		code     int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "", 0},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, "", 0},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, "", 0},
		{`{"jsonrpc":"2.0","id":1,"method":`, "null", -32700},
		{`not json`, "null", -32700},
		{`{"id":7,"method":"initialize"}`, "7", -32600},
		{`{"jsonrpc":"2.0"}`, "null", -32600},
		{`"2.0"`, "null", -32600},
	} {
		got := refusal([]byte(c.line))
		if c.code == 0 {
			if got != nil {
				t.Errorf("%s: refused: %s", c.line, got)
			}
			continue
		}
		var resp struct {
			ID    json.RawMessage
			Error struct{ Code int }
		}
		if err := json.Unmarshal(got, &resp); err != nil || resp.Error.Code != c.code || string(resp.ID) != c.id {
			t.Errorf("%s: %s, want code %d and id %s", c.line, got, c.code, c.id)
		}
	}
}

// Whatever a client sends, the filter passes each line through or answers
// it with one JSON-RPC error, and never fails.
func FuzzFilterLines(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n{\"x\":\n[]\n"))
	f.Add([]byte("\n\n{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":null}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var passed, answered bytes.Buffer
		if err := filterLines(bytes.NewReader(data), &passed, &lockedWriter{w: &answered}); err != nil {
			return // a line over the limit
		}
		for line := range strings.Lines(answered.String()) {
			var resp struct{ Error *sdk.RequestError }
			if json.Unmarshal([]byte(line), &resp) != nil || resp.Error == nil {
				t.Fatalf("not a JSON-RPC error: %q", line)
			}
		}
		for line := range strings.Lines(passed.String()) {
			if refusal([]byte(strings.TrimSuffix(line, "\n"))) != nil {
				t.Fatalf("passed a line that is no message: %q", line)
			}
		}
	})
}

// A client that does not read holds up the updates, never the run: a
// thousand pushes return while the sender is stuck, and the client then
// gets all the text, in order, in fewer messages, and the tool call
// between, in its place.
func TestUpdatesNeverBlock(t *testing.T) {
	stuck := make(chan struct{})
	var mu sync.Mutex
	var got []sdk.SessionUpdate
	q := newUpdates(func(u sdk.SessionUpdate) error {
		<-stuck
		mu.Lock()
		got = append(got, u)
		mu.Unlock()
		return nil
	})
	var want strings.Builder
	for i := range 1000 {
		if i == 500 {
			q.push(sdk.StartToolCall("c", "run_command"))
			continue
		}
		piece := string(rune('a' + i%26))
		want.WriteString(piece)
		q.push(sdk.UpdateAgentMessageText(piece))
	}
	close(stuck)
	q.close()
	var text strings.Builder
	tool := -1
	for _, u := range got {
		if u.ToolCall != nil {
			tool = text.Len()
			continue
		}
		text.WriteString(u.AgentMessageChunk.Content.Text.Text)
	}
	if text.String() != want.String() || tool != 500 || len(got) > 4 {
		t.Errorf("%d updates, the tool call after %d characters; text ok: %v", len(got), tool, text.String() == want.String())
	}
}
