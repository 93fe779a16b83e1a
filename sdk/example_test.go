package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// startServer runs a real specloop server on loopback for the examples.
func startServer(token string) (url string, stop func()) {
	data, _ := os.MkdirTemp("", "specloop-example-data-")
	root, _ := os.MkdirTemp("", "specloop-example-ws-")
	srv, err := server.New(server.Config{Token: token, Config: runner.Config{DataDir: data, WorkspaceRoot: root}})
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	return hs.URL, func() {
		_ = srv.Shutdown(context.Background())
		hs.Close()
		os.RemoveAll(data)
		os.RemoveAll(root)
	}
}

// A scripted run: create it, wait for it, read its result.
func Example() {
	url, stop := startServer("s3cret")
	defer stop()

	c, err := sdk.New(url, sdk.Config{Token: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	run, err := c.CreateRun(ctx, gen.CreateRunRequest{
		Task: gen.Task{Prompt: "Compute 12 x 7 and say whether it is greater than 80."},
		Model: sdk.Script(
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
			`{"type":"finish","answer":"12 * 7 = 84, and 84 > 80."}`,
		),
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err = c.Wait(ctx, run.Id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, run.Result.ExitReason, run.Result.StepsUsed)
	fmt.Println(*run.Result.Answer)
	// Output:
	// finished finished 2
	// 12 * 7 = 84, and 84 > 80.
}

// Following a run's trace events as they happen.
func ExampleClient_Events() {
	url, stop := startServer("")
	defer stop()
	c, _ := sdk.New(url, sdk.Config{})
	ctx := context.Background()
	run, err := c.CreateRun(ctx, gen.CreateRunRequest{
		Task: gen.Task{Prompt: "What is 2 + 3?"},
		Model: sdk.Script(
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"add","right":3}}`,
			`{"type":"finish","answer":"5"}`,
		),
	})
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range c.Events(ctx, run.Id, 0) {
		if err != nil {
			log.Fatal(err)
		}
		line := fmt.Sprintf("step %d %s", ev.Step, ev.EventType)
		if ev.ToolName != nil {
			line += " " + *ev.ToolName
		}
		if ev.ExitReason != nil {
			line += " " + string(*ev.ExitReason)
		}
		fmt.Println(line)
	}
	// Output:
	// step 0 run_started
	// step 1 model_action calculator
	// step 1 observation calculator
	// step 2 model_action
	// step 2 run_finished finished
}

// Calling a tool of the server directly.
func ExampleClient_CallTool() {
	url, stop := startServer("")
	defer stop()
	c, _ := sdk.New(url, sdk.Config{})
	ctx := context.Background()

	raw, err := c.CallTool(ctx, "calculator", gen.CalculatorInput{Left: 1, Operation: gen.CalculatorOperationDivide, Right: 4})
	if err != nil {
		log.Fatal(err)
	}
	var res gen.CalculatorResult
	if err := json.Unmarshal(raw, &res); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Value)

	_, err = c.CallTool(ctx, "calculator", map[string]any{"left": 1, "operation": "divide", "right": 0})
	var apiErr *sdk.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, *apiErr.Problem.Code)
	}
	// Output:
	// 0.25
	// 422 division_by_zero
}

// Errors carry the server's problem; errors.Is tells the common ones apart.
func ExampleAPIError() {
	url, stop := startServer("")
	defer stop()
	c, _ := sdk.New(url, sdk.Config{})
	ctx := context.Background()

	_, err := c.GetRun(ctx, "no-such-run")
	fmt.Println(errors.Is(err, sdk.ErrNotFound))

	_, err = c.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: ""}, Model: sdk.Script("x")})
	var apiErr *sdk.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, *apiErr.Problem.Field)
	}
	// Output:
	// true
	// 400 /task/prompt
}
