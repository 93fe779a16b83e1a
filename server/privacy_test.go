package server_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/trace"
)

// A tool name the model chose that is not a tool of the run, and an
// argument key no input schema defines, never reach the run's trace file
// or its event stream verbatim: both carry their summaries.
func TestModelChosenNamesStayOutOfTracesAndStreams(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	name := "sk-proj-SECRETNAME-" + strings.Repeat("x", 100)
	key := "SECRETKEY-" + strings.Repeat("y", 20_000)
	run := ts.create(gen.CreateRunRequest{Task: gen.Task{Prompt: calcPrompt}, Model: sdk.Script(
		`{"type":"tool_call","tool_name":"`+name+`","arguments":{}}`,
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":2,"`+key+`":1}}`,
		calcResponses[1],
	)})
	if got := ts.wait(run.Id); got.Result == nil || got.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run = %+v", got)
	}
	status, _, stream := ts.do(http.MethodGet, "/v1/runs/"+run.Id+"/events", "", nil)
	if status != http.StatusOK {
		t.Fatalf("events: status %d", status)
	}
	file, err := os.ReadFile(filepath.Join(ts.cfg.DataDir, "traces", run.Id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for what, data := range map[string][]byte{"event stream": stream, "trace file": file} {
		for _, secret := range []string{"SECRETNAME", "SECRETKEY"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("the %s holds the model-chosen %s verbatim", what, secret)
			}
		}
		for _, summary := range []string{trace.Summary(name), trace.Summary(key)} {
			if !bytes.Contains(data, []byte(summary)) {
				t.Errorf("the %s does not say which name it was (%s)", what, summary)
			}
		}
	}
}
