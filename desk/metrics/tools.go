package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/deskd/deskd/desk/event"
)

// toolMetrics count the desks' tool calls (tool.called), the operators'
// decisions on calls that waited for one (approval.decided), and whether
// each MCP server is up (mcp.server.up and mcp.server.down).
type toolMetrics struct {
	calls     *prometheus.CounterVec   // desk, tool, outcome
	duration  *prometheus.HistogramVec // desk, tool
	decisions *prometheus.CounterVec   // desk, tool, outcome
	restarts  *prometheus.CounterVec   // server
	up        *upGauge                 // server, read from SetMCP's function
}

func newToolMetrics(reg *prometheus.Registry) *toolMetrics {
	t := &toolMetrics{
		calls: counterVec("deskd_tool_calls_total",
			"Tool calls a desk's model made, by desk, tool (mcp__<server>__<tool> for an MCP server's; unknown for a name the desk has no tool of) and outcome: "+
				"ok, error (the tool failed or timed out), refused (not run: not allowed, over its day's limit, its server down), denied or expired (waiting for an operator).", "desk", "tool", "outcome"),
		duration: histogramVec("deskd_tool_call_duration_seconds",
			"How long tool calls took, an operator's approval wait included, by desk and tool.",
			prometheus.ExponentialBuckets(0.01, 3, 10), "desk", "tool"), // 10ms .. about 200s
		decisions: counterVec("deskd_approvals_total",
			"Tool calls that waited for an operator's decision, by desk, tool and outcome: approved, denied or expired.", "desk", "tool", "outcome"),
		up: newUpGauge("deskd_mcp_server_up",
			"1 while deskd is connected to the MCP server and has its tools, 0 while it is not (starting, down: deskd retries; or stopped: no desk uses it). "+
				"Absent for a server not in mcp_servers.", "server"),
		restarts: counterVec("deskd_mcp_server_down_total",
			"Times an MCP server could not be started or reached, or went away, by server.", "server"),
	}
	reg.MustRegister(t.calls, t.duration, t.decisions, t.restarts, t.up)
	return t
}

// observe counts a tool, approval or MCP server event; it reports whether
// e was one.
func (t *toolMetrics) observe(e event.Event) bool {
	switch e := e.(type) {
	case event.ToolCalled:
		tool := e.Tool
		if e.Unknown {
			tool = "unknown" // a name the model made up: one series for them all
		}
		t.calls.WithLabelValues(e.Desk, tool, e.Outcome).Inc()
		t.duration.WithLabelValues(e.Desk, tool).Observe(float64(e.DurationMS) / 1000)
	case event.ApprovalDecided:
		t.decisions.WithLabelValues(e.Desk, e.Tool, e.Outcome).Inc()
	case event.MCPServerDown:
		t.restarts.WithLabelValues(e.Server).Inc()
	default:
		return false
	}
	return true
}

// SetMCP sets the function read at each scrape for deskd_mcp_server_up:
// each configured MCP server, and whether it is up now.
func (m *Registry) SetMCP(servers func() map[string]bool) { m.tools.up.set(servers) }
