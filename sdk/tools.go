package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// InvokeTool calls one of the server's tools directly, with args (anything
// that encodes to the tool's input object) in the named workspace under the
// server's workspace root ("" for the root itself). It returns the tool's
// structured result. A tool error is an *APIError with status 422 whose
// Problem.Code is the tool's error code; invalid arguments are a 400 whose
// Problem.Field points at the bad argument.
func (c *Client) InvokeTool(ctx context.Context, name string, args any, workspace string) (map[string]any, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("sdk: encode tool arguments: %w", err)
	}
	// One generic request rather than the generated per-tool methods, so
	// that a tool added to the spec needs no change here.
	u := c.raw.Server + "v1/tools/" + url.PathEscape(name)
	if workspace != "" {
		u += "?" + url.Values{"workspace": {workspace}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("sdk: tool request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, edit := range c.raw.RequestEditors {
		if err := edit(ctx, req); err != nil {
			return nil, err
		}
	}
	resp, err := c.raw.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sdk: call tool: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("sdk: call tool: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, apiError(resp, data)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("sdk: decode tool result: %w", err)
	}
	return out, nil
}
