package mcphost

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
)

// ToolInfo is one of a server's tools, as Probe lists it.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Probe connects to the server once (a stdio server is started, and
// stopped after), lists its tools and disconnects: check-config --probe.
// The connection and the listing are bounded by the server's timeout.
func Probe(ctx context.Context, srv *config.MCPServer) ([]ToolInfo, error) {
	c, err := dial(ctx, clock.Real(), srv)
	if err != nil {
		return nil, fmt.Errorf("probe MCP server %s: %w", srv.Name, err)
	}
	defer c.close()
	out := make([]ToolInfo, 0, len(c.tools))
	for _, t := range c.tools {
		info := ToolInfo{Name: t.Name, Description: t.Description}
		if t.InputSchema != nil {
			if b, err := json.Marshal(t.InputSchema); err == nil {
				info.InputSchema = b
			}
		}
		out = append(out, info)
	}
	return out, nil
}
