package temporal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
)

// shoutDoc is a custom tool that runs a command: it writes its input in
// capitals to shouted.json in the workspace, and returns it.
const shoutDoc = `openapi: 3.0.3
info: {title: shout, version: "1"}
paths:
  /v1/tools/shout:
    post:
      operationId: shout
      description: Returns the text in capitals.
      x-specloop-argv: [sh, -c, "tr a-z A-Z | tee shouted.json"]
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/ShoutInput"}
      responses:
        "200": {description: The text in capitals.}
components:
  schemas:
    ShoutInput:
      type: object
      additionalProperties: false
      required: [text]
      properties:
        text: {type: string, minLength: 1}
`

const shout = `{"type":"tool_call","tool_name":"shout","call_id":"s1","arguments":{"text":"hello"}}`

// shoutServer is the configuration of an API server started with
// --tools-spec shout.yaml --allow-commands --sandbox none, its workspace
// root root ("" for a new one).
func shoutServer(t *testing.T, root string) runner.Config {
	t.Helper()
	s, err := tools.LoadSpec([]byte(shoutDoc))
	if err == nil {
		err = s.RegisterDeclared(tools.DeclaredConfig{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return runner.Config{WorkspaceRoot: root, ToolSpecs: []*tools.Spec{s}, AllowCommands: true, Sandbox: sandbox.Policy{Backend: sandbox.None}}
}

// The API server's --tools-spec reaches the runs on both engines: its
// documents travel with the run as data, the worker loads them with their
// declared handlers and offers the tools, and a run that calls the custom
// command tool has it run in its workspace, alike on both.
func TestEnginesOfferTheServersCustomTools(t *testing.T) {
	t.Parallel()
	req := scriptInput([]string{shout, finish}, "", 0).CreateRunRequest
	root := t.TempDir()
	want := runOn(t, shoutServer(t, root), req)

	h := newHarness(t)
	cfg := shoutServer(t, "")
	cfg.Engine = harnessEngine{t, h}
	got := runOn(t, cfg, req)

	if want.ExitReason != gen.ExitReasonFinished || want.StepsUsed != 2 {
		t.Fatalf("embedded run: %+v", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunResult differs (-embedded +temporal):\n%s", diff)
	}
	for name, dir := range map[string]string{"embedded": root, "temporal": h.root} {
		data, err := os.ReadFile(filepath.Join(dir, "shouted.json"))
		if err != nil || strings.TrimSpace(string(data)) != `{"TEXT":"HELLO"}` {
			t.Errorf("%s: the custom tool's file: %q, %v; want it run once, in the run's workspace", name, data, err)
		}
	}
}

// A worker started without --allow-commands does not offer a custom tool
// that runs a command (nor leaves it out silently): the run ends before
// the model's first call with an error naming the tool and the worker's
// missing flag, and the tool never runs.
func TestWorkerWithoutCommandsRefusesACustomCommandTool(t *testing.T) {
	t.Parallel()
	h := noCommands(newHarness(t))
	cfg := shoutServer(t, "")
	cfg.Engine = harnessEngine{t, h}
	res := runOn(t, cfg, scriptInput([]string{shout, finish}, "", 0).CreateRunRequest)
	if res.ExitReason != gen.ExitReasonInternalError || res.StepsUsed != 0 || res.Error == nil ||
		!strings.Contains(*res.Error, `"shout"`) || !strings.Contains(*res.Error, "--allow-commands") {
		t.Fatalf("result %+v (error %q), want internal_error before any step, naming the tool and --allow-commands", res, ptrText(res.Error))
	}
	t.Logf("%s: %s", res.ExitReason, *res.Error)
	if _, err := os.Stat(filepath.Join(h.root, "shouted.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the custom tool ran on a worker without --allow-commands (%v)", err)
	}
}

// A worker that opens a run again (a new worker after a continue-as-new,
// as after a restart) offers it the custom tools the Open activity
// recorded in the store: the run's call of one, after the first worker
// is gone, runs it.
func TestCustomToolsOutliveTheWorkerThatOpenedTheRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{multiply, multiply, shout, finish}, "", 0)
	in.CustomTools = []string{shoutDoc}
	in.ContinueAsNewSteps = 2
	executions, in := h.runContinued(t, in, true) // a new worker for each
	res, _ := h.result(t, in)
	if executions < 2 || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("%d executions: %+v", executions, res)
	}
	if data, err := os.ReadFile(filepath.Join(h.root, "shouted.json")); err != nil || strings.TrimSpace(string(data)) != `{"TEXT":"HELLO"}` {
		t.Fatalf("the custom tool's file: %q, %v; want it run by the second worker", data, err)
	}
}
