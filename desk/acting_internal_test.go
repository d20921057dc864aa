package desk

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// TestGatedToolsetRefusal: an MCP tool the desk's file does not allow, or
// of a server it does not name, is refused with the reason and what it
// may call; an allowed tool (not offered now: its server is down) and a
// name that is not an MCP tool are left to others.
func TestGatedToolsetRefusal(t *testing.T) {
	g := gatedToolset{uses: map[string]config.DeskMCP{
		"broker": {Server: "broker", Tools: []string{"quote", "place_order"}},
		"quotes": {Server: "quotes", Tools: []string{"*"}},
	}}
	for _, tt := range []struct {
		tool, want string
		known      bool
	}{
		{"mcp__broker__cancel_all", "mcp__broker__cancel_all is not allowed for this desk: of MCP server broker, its file allows quote, place_order only", true},
		{"mcp__bank__transfer", `its file lets it call tools of the MCP servers broker, quotes only, not of "bank"`, true},
		{"mcp__broker__quote", "", false},
		{"mcp__quotes__anything", "", false},
		{"frobnicate", "", false},
	} {
		why, known := g.Refusal(tt.tool)
		if known != tt.known || !strings.Contains(why, tt.want) {
			t.Errorf("Refusal(%s) = %q, %v; want %v and %q", tt.tool, why, known, tt.known, tt.want)
		}
	}
}
