package desk

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/router"
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

// fixedToolset offers the same tools at every turn.
type fixedToolset []router.Tool

func (f fixedToolset) Tools() []router.Tool { return f }
func (fixedToolset) Notes() []string        { return nil }

// TestMisnamedApproveMakesEveryCallWait: on a desk that allows every tool
// of a server, an approve (or limits) entry naming a tool the server does
// not have (get_sum for get-sum) puts every tool of that server behind an
// operator's decision, and is reported once; spelt right, only that tool
// waits.
func TestMisnamedApproveMakesEveryCallWait(t *testing.T) {
	spec := func(name string) router.Tool {
		return router.Tool{Spec: router.ToolSpec{Name: "mcp__everything__" + name}}
	}
	inner := fixedToolset{spec("echo"), spec("get-sum")}
	clk := clock.NewFake(time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC))
	bus := event.New()
	t.Cleanup(bus.Close)
	q := approval.New(approval.Options{Clock: clk, Bus: bus})
	t.Cleanup(q.Close)
	for _, tt := range []struct {
		entry  config.DeskMCP
		gated  []string
		report []string
	}{
		{config.DeskMCP{Tools: []string{"*"}, Approve: []string{"get_sum"}}, []string{"mcp__everything__echo", "mcp__everything__get-sum"}, []string{"approve: get_sum"}},
		{config.DeskMCP{Tools: []string{"*"}, Limits: map[string]int{"get_sum": 5}}, []string{"mcp__everything__echo", "mcp__everything__get-sum"}, []string{"limits: get_sum"}},
		{config.DeskMCP{Tools: []string{"*"}, Approve: []string{"get-sum"}}, []string{"mcp__everything__get-sum"}, nil},
	} {
		var reported [][]string
		g := gatedToolset{inner: inner, uses: map[string]config.DeskMCP{"everything": tt.entry}, queue: q, counter: &counter{path: t.TempDir() + "/limits.json"},
			misnamed: func(_ string, names []string) { reported = append(reported, names) }}
		var gated []string
		for _, tl := range g.Tools() {
			if tl.Gate != nil {
				gated = append(gated, tl.Spec.Name)
			}
		}
		if !slices.Equal(gated, tt.gated) {
			t.Errorf("%+v: gated %v, want %v", tt.entry, gated, tt.gated)
		}
		if (tt.report == nil) != (len(reported) == 0) || (tt.report != nil && !slices.Equal(reported[0], tt.report)) {
			t.Errorf("%+v: reported %v, want %v", tt.entry, reported, tt.report)
		}
	}
}
