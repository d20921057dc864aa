package termview_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/router"
)

// TestApprovalsTable: deskd approvals prints each waiting call's id,
// desk, tool, time left and arguments on one line; an expired one says
// so; a hostile tool name or argument reaches the screen escaped.
func TestApprovalsTable(t *testing.T) {
	now := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	var b strings.Builder
	termview.Approvals(&b, []approval.Pending{
		{ID: "a1b2c3d4", Desk: "main", Tool: "mcp__broker__place_order", ExpiresAt: now.Add(90*time.Second + 400*time.Millisecond),
			Arguments: json.RawMessage("{\n  \"symbol\": \"INFY\",\n  \"qty\": 10\n}")},
		{ID: "e5f6a7b8", Desk: "fx", Tool: "mcp__x__\x1b[31mred", ExpiresAt: now.Add(-time.Second),
			Arguments: json.RawMessage(`{"note": "a\u001b[2Jb\nc"}`)},
	}, now)
	out := b.String()
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "EXPIRES IN") {
		t.Fatalf("deskd approvals =\n%s", out)
	}
	for _, want := range []string{"a1b2c3d4", "main", "mcp__broker__place_order", "1m30s", `{"symbol":"INFY","qty":10}`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("first row %q lacks %q", lines[1], want)
		}
	}
	if !strings.Contains(lines[2], "expired") || !strings.Contains(lines[2], "e5f6a7b8") {
		t.Errorf("second row %q: want e5f6a7b8 expired", lines[2])
	}
	if strings.ContainsAny(out, "\x1b") {
		t.Errorf("deskd approvals let a control character through:\n%q", out)
	}
	if !strings.Contains(out, "deskd approve DESK ID") {
		t.Errorf("deskd approvals does not say how to decide:\n%s", out)
	}
	b.Reset()
	termview.Approvals(&b, nil, now)
	if got := b.String(); got != "no tool call waits for a decision\n" {
		t.Errorf("deskd approvals with none = %q", got)
	}
}

// TestDecided: deskd approve and deny print the decision: id, tool, desk,
// outcome, who, when, the reason, the arguments, and what follows.
func TestDecided(t *testing.T) {
	at := time.Date(2026, 3, 2, 4, 31, 0, 0, time.UTC)
	d := router.Decision{ID: "a1b2c3d4", Tool: "mcp__broker__place_order", Arguments: json.RawMessage(`{"qty": 10}`),
		Outcome: router.DecisionDenied, By: "alice\x1b[0m", Reason: "too\nlarge", DecidedAt: at}
	got := termview.Decided("main", d)
	for _, want := range []string{"call a1b2c3d4 (mcp__broker__place_order) of desk main denied by alice", "at 2026-03-02T04:31:00Z",
		`arguments: {"qty":10}`, "the call does not run"} {
		if !strings.Contains(got, want) {
			t.Errorf("Decided = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "\x1b") || strings.Count(got, "\n") != 2 {
		t.Errorf("Decided = %q: want three lines, no control character", got)
	}
	d.Outcome, d.Reason = router.DecisionApproved, ""
	if got := termview.Decided("main", d); !strings.Contains(got, "approved by") || !strings.Contains(got, "the call runs now") {
		t.Errorf("Decided(approved) = %q", got)
	}
}

// TestStatusSaysWhatToolsAreUnavailableAndWhatWaits: deskd status says,
// under its table, which of a desk's MCP servers is not up (with its
// error, escaped) and how many of its tool calls wait for a decision; an
// up server and a desk with nothing waiting say nothing.
func TestStatusSaysWhatToolsAreUnavailableAndWhatWaits(t *testing.T) {
	out := status(
		desk.Status{Name: "main", State: desk.StateIdle, MCP: []mcphost.ServerStatus{
			{Name: "broker", State: mcphost.StateDown, Error: "connection refused\x1b[2J"},
			{Name: "quotes", State: mcphost.StateUp},
		}, Approvals: []approval.Pending{{ID: "a1b2c3d4"}, {ID: "e5f6a7b8"}}},
		desk.Status{Name: "fx", State: desk.StateIdle, MCP: []mcphost.ServerStatus{{Name: "fxbroker", State: mcphost.StateUp}}},
	)
	has(t, "status", out, []string{
		`desk main: MCP server broker is down, so its tools are unavailable to the desk: connection refused\u001b[2J`,
		"desk main: 2 tool calls wait for an operator's decision: deskd approvals main",
	})
	if strings.Contains(out, "quotes") || strings.Contains(out, "fxbroker") || strings.Contains(out, "desk fx:") || strings.Contains(out, "\x1b") {
		t.Errorf("status says too much, or unescaped:\n%s", out)
	}
}
