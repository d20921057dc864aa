package desk

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
)

// TestGatedToolsetRefusal: an MCP tool the desk's file does not allow, or
// of a server it does not name, is refused with the reason and what it
// may call; an allowed tool not offered now says why (its server is down,
// or lacks it); a name that is not an MCP tool is left to others.
func TestGatedToolsetRefusal(t *testing.T) {
	g := gatedToolset{server: func(name string) (mcphost.ServerStatus, bool) {
		return mcphost.ServerStatus{Name: name, State: mcphost.StateDown, Error: "connection refused"}, name == "broker"
	}, uses: map[string]config.DeskMCP{
		"broker": {Server: "broker", Tools: []string{"quote", "place_order"}},
		"quotes": {Server: "quotes", Tools: []string{"*"}},
	}}
	for _, tt := range []struct {
		tool, want     string
		allowed, known bool
	}{
		{"mcp__broker__cancel_all", "mcp__broker__cancel_all is not allowed for this desk: of MCP server broker, its file allows quote, place_order only", false, true},
		{"mcp__bank__transfer", `its file lets it call tools of the MCP servers broker, quotes only, not of "bank"`, false, true},
		{"mcp__broker__quote", "mcp__broker__quote is unavailable now: MCP server broker is down (connection refused); the call did not run", true, true},
		{"mcp__quotes__anything", "mcp__quotes__anything is unavailable now: MCP server quotes does not offer it now", true, true},
		{"frobnicate", "", false, false},
	} {
		why, allowed, known := g.Refusal(tt.tool)
		if known != tt.known || allowed != tt.allowed || !strings.Contains(why, tt.want) {
			t.Errorf("Refusal(%s) = %q, %v, %v; want %q, %v, %v", tt.tool, why, allowed, known, tt.want, tt.allowed, tt.known)
		}
	}
}
