package runner

import (
	"fmt"
	"strings"

	"github.com/specloop/specloop/mcpclient"
)

// mcpServers returns the configured MCP servers a request names, in its
// order; a name the server was not configured with is a 400 naming it. A
// client only ever chooses among the servers the operator configured.
func (s *Runner) mcpServers(names *[]string) ([]mcpclient.Server, error) {
	if names == nil || len(*names) == 0 {
		return nil, nil
	}
	var out []mcpclient.Server
	seen := map[string]bool{}
	for i, name := range *names {
		field := fmt.Sprintf("/mcp_servers/%d", i)
		if seen[name] {
			return nil, badField(field, "the MCP server %q is named twice", clip(name, 64))
		}
		seen[name] = true
		found := false
		for _, srv := range s.cfg.MCPServers {
			if srv.Name == name {
				out = append(out, srv)
				found = true
				break
			}
		}
		if !found {
			return nil, badField(field, "unknown MCP server %q; this server is configured with: %s", clip(name, 64), s.mcpNames())
		}
	}
	return out, nil
}

// mcpNames lists the configured MCP servers' names, for messages.
func (s *Runner) mcpNames() string {
	if len(s.cfg.MCPServers) == 0 {
		return "none (serve --mcp NAME=... configures them)"
	}
	names := make([]string, len(s.cfg.MCPServers))
	for i, srv := range s.cfg.MCPServers {
		names[i] = srv.Name
	}
	return strings.Join(names, ", ")
}
