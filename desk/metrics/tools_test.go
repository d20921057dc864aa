package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsTools: tool.called counts in deskd_tool_calls_total and
// deskd_tool_call_duration_seconds, approval.decided in
// deskd_approvals_total, mcp.server.down in deskd_mcp_server_down_total;
// deskd_mcp_server_up is read from SetMCP's function at each scrape.
func TestMetricsTools(t *testing.T) {
	bus, m := newMetrics(t)
	h := event.Header{Desk: "fx"}
	const order = "mcp__broker__place_order"
	event.Publish(bus, event.ToolCalled{Header: h, Tool: order, Server: "broker", Outcome: "ok", DurationMS: 1500})
	event.Publish(bus, event.ToolCalled{Header: h, Tool: order, Server: "broker", Outcome: "denied", DurationMS: 500})
	event.Publish(bus, event.ToolCalled{Header: h, Tool: "note", Outcome: "ok"})
	event.Publish(bus, event.ToolCalled{Header: h, Tool: "made_up_1", Outcome: "refused", Unknown: true})
	event.Publish(bus, event.ToolCalled{Header: h, Tool: "made_up_2", Outcome: "refused", Unknown: true})
	event.Publish(bus, event.ApprovalDecided{Header: h, Tool: order, Outcome: "approved"})
	event.Publish(bus, event.ApprovalDecided{Header: h, Tool: order, Outcome: "expired"})
	event.Publish(bus, event.MCPServerUp{Server: "broker", Tools: 3})
	event.Publish(bus, event.MCPServerDown{Server: "quotes", Error: "connection refused"})
	bus.Close() // every event delivered
	if _, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_mcp_server_up", "server", "broker"); ok {
		t.Error("deskd_mcp_server_up is present before SetMCP")
	}
	servers := map[string]bool{"broker": true, "quotes": false}
	m.SetMCP(func() map[string]bool { return servers })
	fams := metricstest.Scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"deskd_tool_calls_total", []string{"desk", "fx", "outcome", "ok", "tool", order}, 1},
		{"deskd_tool_calls_total", []string{"desk", "fx", "outcome", "denied", "tool", order}, 1},
		{"deskd_tool_calls_total", []string{"desk", "fx", "outcome", "ok", "tool", "note"}, 1},
		{"deskd_tool_calls_total", []string{"desk", "fx", "outcome", "refused", "tool", "unknown"}, 2},
		{"deskd_approvals_total", []string{"desk", "fx", "outcome", "approved", "tool", order}, 1},
		{"deskd_approvals_total", []string{"desk", "fx", "outcome", "expired", "tool", order}, 1},
		{"deskd_mcp_server_down_total", []string{"server", "quotes"}, 1},
		{"deskd_mcp_server_up", []string{"server", "broker"}, 1},
		{"deskd_mcp_server_up", []string{"server", "quotes"}, 0},
	} {
		if v, ok := metricstest.Value(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v, %v; want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	delete(servers, "quotes") // removed from mcp_servers
	if _, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_mcp_server_up", "server", "quotes"); ok {
		t.Error("deskd_mcp_server_up of a removed server is still there")
	}
	if v, ok := metricstest.Value(fams, "deskd_tool_call_duration_seconds", "desk", "fx", "tool", order); !ok || v != 2 {
		t.Errorf("deskd_tool_call_duration_seconds{fx,%s} = %v, %v; want 2 calls", order, v, ok)
	}
}
