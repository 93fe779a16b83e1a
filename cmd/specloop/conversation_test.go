package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/cmd/internal/cli"
)

// chatServer is a fake OpenAI Chat Completions endpoint answering each
// request with the next reply (text, then tool name and JSON arguments
// pairs) and keeping the requests' bodies.
func chatServer(t *testing.T, replies ...[]string) (url string, bodies func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(body))
		if len(replies) == 0 {
			http.Error(w, `{"error":{"message":"no more replies"}}`, http.StatusBadRequest)
			return
		}
		reply := replies[0]
		replies = replies[1:]
		msg := map[string]any{"role": "assistant", "content": reply[0]}
		var calls []map[string]any
		for i := 1; i+1 < len(reply); i += 2 {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", len(got), i), "type": "function",
				"function": map[string]any{"name": reply[i], "arguments": reply[i+1]}})
		}
		reason := "stop"
		if calls != nil {
			msg["tool_calls"], reason = calls, "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": reason}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

var shownRun = regexp.MustCompile(`transcript: specloop show ([0-9a-f]{16})`)

// A three-message conversation with specloop run: a run, then `run
// --continue` twice, from another directory. Each turn keeps the first
// run's flags (model, base URL, workspace made absolute) but for those
// given again, and its own step budget; the model's text of the first
// turn reaches the second turn's request; a text-only reply ends a
// follow-up as its answer; show prints a continued run's transcript,
// starting with the message.
func TestRunContinue(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	url, bodies := chatServer(t,
		[]string{"I will multiply first.", "calculator", `{"left":12,"operation":"multiply","right":7}`},
		[]string{"", "finish", `{"answer":"84"}`},
		[]string{"It is 85 now."},
		[]string{"", "calculator", `{"left":85,"operation":"multiply","right":2}`},
		[]string{"", "finish", `{"answer":"170"}`},
	)
	ws := t.TempDir()
	t.Chdir(ws)
	code, stdout, stderr := specloop(t, "run", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--max-steps", "2", "--workspace", ".", "Compute 12 x 7.")
	if code != exitOK || !strings.Contains(stdout, "84") {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	ids := []string{shownRun.FindStringSubmatch(stdout)[1]}
	t.Chdir(t.TempDir()) // the workspace was recorded absolute
	for _, turn := range []struct {
		args   []string
		answer string
	}{
		{[]string{"Now add one."}, "It is 85 now."},
		{[]string{"--max-steps", "3", "Double it."}, "170"},
	} {
		args := append([]string{"run", "--continue", ids[len(ids)-1]}, turn.args...)
		code, stdout, stderr := specloop(t, args...)
		m := shownRun.FindStringSubmatch(stdout)
		if code != exitOK || !strings.Contains(stdout, turn.answer) || m == nil {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		ids = append(ids, m[1])
	}
	got := bodies()
	if len(got) != 5 {
		t.Fatalf("the model was asked %d times, want 5", len(got))
	}
	for _, want := range []string{`"I will multiply first."`, `"Compute 12 x 7."`, `"Now add one."`} {
		if !strings.Contains(got[2], want) {
			t.Errorf("the second turn's request lacks %s:\n%s", want, got[2])
		}
	}
	if !strings.Contains(got[3], `It is 85 now.`) || !strings.Contains(got[3], `"Double it."`) {
		t.Errorf("the third turn's request lacks the second's answer or its message:\n%s", got[3])
	}
	dir := filepath.Join(os.Getenv(cli.StateHomeEnv), "specloop", "runs", ids[2])
	fi, err := os.Stat(filepath.Join(dir, requestFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the run's request: %v, mode %v; want 0600", err, fi)
	}
	rq, _, err := loadRunRequest(ids[2])
	if err != nil || rq.Continues != ids[1] || rq.Prompt != "Double it." || !slices.Contains(rq.Args, "--workspace="+ws) || !slices.Contains(rq.Args, "--max-steps=3") || slices.ContainsFunc(rq.Args, func(a string) bool { return strings.HasPrefix(a, "--continue") }) {
		t.Errorf("request = %+v (%v); want it to continue %s in workspace %s with --max-steps 3, without --continue", rq, err, ids[1], ws)
	}
	code, shown, stderr := specloop(t, "show", ids[2])
	if code != exitOK || !strings.Contains(shown, "task: Double it.") || !strings.Contains(shown, "170") {
		t.Fatalf("show of the continued run: exit %d\n%s%s", code, shown, stderr)
	}
	// A run without a record is not continued.
	if code, _, stderr := specloop(t, "run", "--continue", "0123456789abcdef", "more"); code != exitUsage || !strings.Contains(stderr, "keeps its request") {
		t.Errorf("continuing no run: exit %d, %q", code, stderr)
	}
}

// run --remote --continue continues a server's run; a flag of the model
// given now (--script) replaces the recorded one (--model) locally too.
func TestRunContinueRemoteAndScript(t *testing.T) {
	url := remoteURL(t)
	code, stdout, stderr := specloop(t, "run", "--remote", url, "--script", "testdata/calculator.script", "Compute 12 x 7 and say whether it is greater than 80.")
	m := regexp.MustCompile(`remote run ([0-9a-f]{16})`).FindStringSubmatch(stderr)
	if code != exitOK || m == nil {
		t.Fatalf("run --remote: exit %d\n%s%s", code, stdout, stderr)
	}
	script := writeScript(t, `{"type":"finish","answer":"still 84"}`)
	code, stdout, stderr = specloop(t, "run", "--remote", url, "--continue", m[1], "--script", script, "Say it again.")
	if code != exitOK || !strings.Contains(stdout, "still 84") || !strings.Contains(stderr, "remote run ") {
		t.Fatalf("run --remote --continue: exit %d\n%s%s", code, stdout, stderr)
	}

	t.Setenv("OPENAI_API_KEY", "")
	url, _ = chatServer(t, []string{"", "finish", `{"answer":"84"}`})
	code, stdout, stderr = specloop(t, "run", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--workspace", t.TempDir(), "Compute 12 x 7.")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = specloop(t, "run", "--continue", shownRun.FindStringSubmatch(stdout)[1], "--script", script, "Again.")
	if code != exitOK || !strings.Contains(stdout, "still 84") {
		t.Fatalf("run --continue --script: exit %d\n%s%s", code, stdout, stderr)
	}
}
