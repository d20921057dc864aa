package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

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
	c, err := dial(ctx, clock.Real(), DefaultGrace, func() *config.MCPServer { return srv })
	if err != nil {
		return nil, fmt.Errorf("probe MCP server %s: %w", srv.Name, hideErr(srv, err))
	}
	defer c.close()
	out := make([]ToolInfo, 0, len(c.tools.tools))
	for _, t := range c.tools.tools {
		out = append(out, ToolInfo{Name: t.name, Description: t.description, InputSchema: t.schema})
	}
	return out, nil
}

// ProbeReport is what ProbeConfig found of one server.
type ProbeReport struct {
	Server string
	// Tools are the server's tools; Err says why there are none.
	Tools []ToolInfo
	Err   error
	// Missing are the tools desks' files allow that the server does not
	// have, sorted by desk and tool.
	Missing []MissingTool
	// Used are the desks that use the server, sorted.
	Used []string
}

// MissingTool is a tool a desk's mcp entry names that its server lacks:
// in its tools, approve or limits (Key).
type MissingTool struct{ Desk, Key, Tool string }

// ProbeConfig probes every server of cfg (Probe), one after the other,
// sorted by name, and marks the tools its desks allow that it does not
// have.
func ProbeConfig(ctx context.Context, cfg *config.Config) []ProbeReport {
	names := make([]string, 0, len(cfg.MCPServers))
	for name := range cfg.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []ProbeReport
	for _, name := range names {
		rep := ProbeReport{Server: name}
		rep.Tools, rep.Err = Probe(ctx, cfg.MCPServers[name])
		has := map[string]bool{}
		for _, t := range rep.Tools {
			has[t.Name] = true
		}
		for _, desk := range slices.Sorted(maps.Keys(cfg.Desks)) {
			use, ok := cfg.Desks[desk].MCP[name]
			if !ok {
				continue
			}
			rep.Used = append(rep.Used, desk)
			if rep.Err != nil {
				continue
			}
			for key, tools := range map[string][]string{"tools": use.Tools, "approve": use.Approve, "limits": slices.Sorted(maps.Keys(use.Limits))} {
				for _, tool := range tools {
					if tool != config.AllMCPTools && !has[tool] {
						rep.Missing = append(rep.Missing, MissingTool{Desk: desk, Key: key, Tool: tool})
					}
				}
			}
			sort.Slice(rep.Missing, func(i, j int) bool {
				a, b := rep.Missing[i], rep.Missing[j]
				return a.Desk+"\x00"+a.Key+"\x00"+a.Tool < b.Desk+"\x00"+b.Key+"\x00"+b.Tool
			})
		}
		out = append(out, rep)
	}
	return out
}
