package wiring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/wiring"
)

// TestCheckOutputIsRedacted: a completion check that prints a secret of
// the process's environment does not hand it to the RunResult (which a
// server returns and stores, and `specloop run --json` prints), nor to the
// trace's run_finished; a tail cut from longer output keeps no piece of a
// secret whose start was cut off.
func TestCheckOutputIsRedacted(t *testing.T) {
	const secret = "Zq9-deploy-secret-XK7W"
	t.Setenv("DEPLOY_TOKEN", secret)
	for name, check := range map[string]string{
		"short": "echo the token is " + secret,
		// The 4 KiB tail starts 5 bytes before the secret's end: "-XK7W".
		"cut": "printf '%s\\n' " + secret + "; head -c 4090 /dev/zero | tr '\\0' y",
	} {
		t.Run(name, func(t *testing.T) {
			var traceBuf bytes.Buffer
			s, err := wiring.Open(wiring.Config{Dir: t.TempDir(), Sandbox: none, Check: check, TraceWriter: &traceBuf})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := agent.Run(context.Background(), gen.Task{Prompt: "Finish."}, model.NewScript(`{"type":"finish","answer":"done"}`), s.Options)
			if err != nil || res.ExitReason != gen.ExitReasonFinished {
				t.Fatalf("run: %s %v", res.ExitReason, err)
			}
			if res.Check == nil || res.Check.OutputTail == nil {
				t.Fatalf("the result has no check output: %+v", res.Check)
			}
			out, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			for what, text := range map[string]string{"the RunResult": string(out), "the trace": traceBuf.String()} {
				if strings.Contains(text, secret) || strings.Contains(text, "XK7W") {
					t.Errorf("%s holds the secret (or a piece of it):\n%.400s", what, text)
				}
			}
			if name == "short" && *res.Check.OutputTail != "the token is [REDACTED]\n" {
				t.Errorf("output_tail %q, want the line with the secret redacted", *res.Check.OutputTail)
			}
			if name == "cut" && *res.Check.OutputTail != strings.Repeat("y", 4090) {
				t.Errorf("output_tail of %d bytes, want the 4090 bytes of the last whole line", len(*res.Check.OutputTail))
			}
		})
	}
}
