package desk_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
)

// TestLogToolAndApprovalEvents: the tool, approval and MCP server events
// are logged as sentences that say what to do; a server down and an
// expired approval at warn.
func TestLogToolAndApprovalEvents(t *testing.T) {
	ist := kolkata(t)
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	h := event.Header{At: at, Desk: "main"}
	const order = "mcp__broker__place_order"
	for _, tt := range []struct {
		e            event.Event
		level, topic string
		want         string
	}{
		{event.ToolCalled{Header: h, Tool: order, Outcome: "denied", DurationMS: 1500, Error: "denied by risk"}, "info", "tool.called",
			"tool mcp__broker__place_order denied in 1.5s: denied by risk"},
		{event.ApprovalRequested{Header: h, ID: "a1b2c3d4", Tool: order, Arguments: json.RawMessage(`{}`), ExpiresAt: at.Add(2 * time.Minute)},
			"info", "approval.requested",
			"tool call a1b2c3d4 (mcp__broker__place_order) waits for an operator's approval until 2026-03-02 10:02:00: deskd approve main a1b2c3d4, or deny"},
		{event.ApprovalDecided{Header: h, ID: "a1b2c3d4", Tool: order, Outcome: "denied", By: "risk", Reason: "too big"}, "info", "approval.decided",
			"tool call a1b2c3d4 (mcp__broker__place_order) denied by risk: too big"},
		{event.ApprovalDecided{Header: h, ID: "a1b2c3d4", Tool: order, Outcome: "expired", By: "deskd"}, "warn", "approval.decided",
			"tool call a1b2c3d4 (mcp__broker__place_order) expired: no operator decided on it in time; it did not run"},
		{event.ApprovalDecided{Header: h, ID: "a1b2c3d4", Tool: order, Outcome: "refused", By: "deskd", Reason: "the turn was stopped"}, "info",
			"approval.decided", "tool call a1b2c3d4 (mcp__broker__place_order) no longer waits: the turn was stopped; it did not run"},
		{event.MCPServerUp{Header: event.Header{At: at}, Server: "broker", Tools: 3}, "info", "mcp.server.up", "MCP server broker is up with 3 tools"},
		{event.MCPServerDown{Header: event.Header{At: at}, Server: "broker", Error: "connection refused", RetryAt: at.Add(time.Second)}, "warn",
			"mcp.server.down", "MCP server broker is down: connection refused; next try at 2026-03-02 10:00:01"},
	} {
		m := logLine(t, ist, at, func(b *event.Bus) { publishAny(b, tt.e) })
		if m["event"] != tt.topic || m["message"] != tt.want || m["level"] != tt.level {
			t.Errorf("line %v, want event %q level %q message %q", m, tt.topic, tt.level, tt.want)
		}
	}
}

// publishAny publishes e, whichever catalogue type it is.
func publishAny(b *event.Bus, e event.Event) {
	switch e := e.(type) {
	case event.ToolCalled:
		event.Publish(b, e)
	case event.ApprovalRequested:
		event.Publish(b, e)
	case event.ApprovalDecided:
		event.Publish(b, e)
	case event.MCPServerUp:
		event.Publish(b, e)
	case event.MCPServerDown:
		event.Publish(b, e)
	}
}
