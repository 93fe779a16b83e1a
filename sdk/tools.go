package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/specloop/specloop/gen"
)

// CallTool calls the server's tool named name directly (POST
// /v1/tools/{name}), with input (anything that encodes to the tool's input
// object, such as a gen.CalculatorInput) in the server's workspace root. It
// serves every tool Tools lists: built-in, custom and MCP tools alike. It
// returns the tool's result, to decode into the tool's result type (a
// gen.CalculatorResult, say). A tool error is an *APIError with status 422
// whose Problem.Code is the tool's error code; invalid input is a 400
// whose Problem.Field points at the bad argument.
func (c *Client) CallTool(ctx context.Context, name string, input any) (json.RawMessage, error) {
	return c.CallToolIn(ctx, "", name, input)
}

// CallToolIn is CallTool in the named workspace under the server's
// workspace root ("" for the root itself).
func (c *Client) CallToolIn(ctx context.Context, workspace, name string, input any) (json.RawMessage, error) {
	body, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("sdk: encode the input of %s: %w", name, err)
	}
	var params gen.CallToolParams
	if workspace != "" {
		params.Workspace = &workspace
	}
	resp, err := c.raw.CallToolWithBody(ctx, name, &params, "application/json", bytes.NewReader(body))
	return decode[json.RawMessage]("call tool "+name, http.StatusOK, resp, err)
}
