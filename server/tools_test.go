package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// TestTools lists the tools and invokes them through the remote runtime:
// results, tool errors (422 with the code) and invalid arguments (400).
func TestTools(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(ts.cfg.WorkspaceRoot, "proj"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts.cfg.WorkspaceRoot, "proj", "a.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	specs, err := ts.sdk.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !hasTool(specs, "calculator") {
		t.Fatalf("no calculator among %d tools", len(specs))
	}
	if hasTool(specs, "run_command") {
		t.Errorf("run_command is offered by a server without --allow-commands")
	}

	t.Run("generated client", func(t *testing.T) {
		res := decodeReply[map[string]any](t, ts.answer(ts.raw.CallTool(ctx, "calculator", nil, gen.CallToolJSONRequestBody{"left": 12, "operation": gen.CalculatorOperationMultiply, "right": 7})), http.StatusOK)
		if res["value"] != 84.0 {
			t.Errorf("12 * 7 = %v", res["value"])
		}
	})

	tests := []struct {
		name      string
		tool      string
		args      any
		workspace string
		want      map[string]any
		status    int
		code      gen.ErrorCode
		field     string
		detail    string
	}{
		{name: "calculator", tool: "calculator", args: map[string]any{"left": 1, "operation": "divide", "right": 4}, want: map[string]any{"value": 0.25}},
		{name: "division by zero", tool: "calculator", args: map[string]any{"left": 1, "operation": "divide", "right": 0}, status: 422, code: "division_by_zero"},
		{name: "missing argument", tool: "calculator", args: map[string]any{"left": 1, "operation": "add"}, status: 400, field: "/right"},
		{name: "unknown argument", tool: "calculator", args: map[string]any{"left": 1, "operation": "add", "right": 1, "secret_key": 1}, status: 400,
			detail: "the input has a property the tool's input schema does not allow (allowed: left, operation, right)"},
		{name: "not an object", tool: "calculator", args: []int{1}, status: 400, detail: "the request body must be a JSON object (the tool's input)"},
		{name: "read in a workspace", tool: "read_file", args: map[string]any{"path": "a.txt"}, workspace: "proj"},
		{name: "file not found", tool: "read_file", args: map[string]any{"path": "nope.txt"}, workspace: "proj", status: 422, code: "not_found"},
		{name: "path escapes", tool: "read_file", args: map[string]any{"path": "../../etc/passwd"}, workspace: "proj", status: 422, code: "outside_workspace"},
		{name: "commands disabled", tool: "run_command", args: map[string]any{"command": "echo hi"}, status: 422, code: "commands_disabled"},
		{name: "workspace missing", tool: "calculator", args: map[string]any{"left": 1, "operation": "add", "right": 1}, workspace: "absent", status: 404},
		{name: "unknown tool", tool: "no_such_tool", args: map[string]any{}, status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := callTool(ctx, ts.sdk, tt.workspace, tt.tool, tt.args)
			if tt.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if tt.want != nil {
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("result (-want +got):\n%s", diff)
					}
				}
				return
			}
			var apiErr *sdk.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != tt.status {
				t.Fatalf("err = %v, want status %d", err, tt.status)
			}
			if tt.code != "" && (apiErr.Problem.Code == nil || *apiErr.Problem.Code != tt.code) {
				t.Errorf("code %v, want %s", apiErr.Problem.Code, tt.code)
			}
			if tt.field != "" && (apiErr.Problem.Field == nil || *apiErr.Problem.Field != tt.field) {
				t.Errorf("field %v, want %s", apiErr.Problem.Field, tt.field)
			}
			if tt.detail != "" && (apiErr.Problem.Detail == nil || *apiErr.Problem.Detail != tt.detail) {
				t.Errorf("detail %v, want %q", apiErr.Problem.Detail, tt.detail)
			}
			if tt.status == 422 && !errors.Is(err, sdk.ErrToolFailed) {
				t.Errorf("errors.Is(err, ErrToolFailed) = false")
			}
		})
	}
}

// TestCommandsAllowed: with AllowCommands, run_command and checks work.
func TestCommandsAllowed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{Config: runner.Config{AllowCommands: true}})
	ctx := context.Background()
	got, err := callTool(ctx, ts.sdk, "", "run_command", map[string]any{"command": "echo hello"})
	if err != nil {
		t.Fatal(err)
	}
	if got["exit_code"] != 0.0 || strings.TrimSpace(got["stdout"].(string)) != "hello" {
		t.Errorf("run_command: %v", got)
	}
	req := calcRequest()
	req.Model = sdk.Script(calcResponses[0], calcResponses[1], calcResponses[1])
	req.MaxSteps = ptr(3)
	req.Check = ptr("test -f done.txt")
	run := ts.wait(ts.create(req).Id)
	if run.Result.ExitReason != gen.ExitReasonCheckFailed || run.Result.Check == nil || run.Result.Check.Passed {
		t.Errorf("a run whose check fails: %+v", run.Result)
	}
	if err := os.WriteFile(filepath.Join(ts.cfg.WorkspaceRoot, "done.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run = ts.wait(ts.create(req).Id)
	if run.Result.ExitReason != gen.ExitReasonFinished || run.Result.Check == nil || !run.Result.Check.Passed {
		t.Errorf("a run whose check passes: %+v", run.Result)
	}
	status, _, _ := ts.do("GET", "/v1/tools", "", nil)
	if status != http.StatusOK {
		t.Errorf("list tools: %d", status)
	}
}

// callTool calls a tool through the sdk and decodes its result.
func callTool(ctx context.Context, c *sdk.Client, workspace, name string, input any) (map[string]any, error) {
	raw, err := c.CallToolIn(ctx, workspace, name, input)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}
