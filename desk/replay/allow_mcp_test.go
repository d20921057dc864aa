package replay_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/desk/replay"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
)

// servedCalls are the tool calls an MCP server received, as
// "tool arguments".
type servedCalls struct {
	mu    sync.Mutex
	calls []string
}

// countCalls records every tool call srv receives.
func countCalls(srv *mcp.Server) *servedCalls {
	c := &servedCalls{}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				c.mu.Lock()
				c.calls = append(c.calls, p.Name+" "+string(p.Arguments))
				c.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	return c
}

func (c *servedCalls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// echoAndOrder is a candidate model that, at trigger 3 (whose original
// called no tool), calls the free MCP tool echo and place_order, under
// approve in the live desk's file; it answers the rest in its own words.
func echoAndOrder(r routertest.Request) routertest.Reply {
	if last := r.Last(); last.Role == "tool" {
		return routertest.Reply{Text: "heard " + last.Text}
	}
	if strings.Contains(r.LastUser(), "Trigger 3:") && r.MayCallTools() {
		return routertest.Reply{ToolCalls: []routertest.ToolCall{
			{Name: "mcp__broker__echo", Args: `{"text":"hello from the replay"}`},
			{Name: "mcp__broker__place_order", Args: `{"symbol":"TCS","qty":1,"side":"buy"}`},
		}}
	}
	return routertest.Reply{Text: "Candidate: nothing to do."}
}

// TestReplayAllowedMCPTool: --allow-tools names a free MCP tool that the
// original never called and place_order, under approve. The free tool
// runs once for real: the server gets exactly that call. place_order
// never runs (the server gets no call of it, no order is placed), is
// never queued for an operator (the sandbox's session holds no approval
// record), and is listed in the report as needing approval; the same
// holds when the candidate's file drops the approve, since the live
// desk's file and the day's record put the tool under approve. The live
// desk folder is byte for byte the same.
func TestReplayAllowedMCPTool(t *testing.T) {
	for _, tc := range []struct{ name, approve string }{
		{"candidate keeps approve", ", approve: [place_order]"},
		{"candidate drops approve", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, echoAndOrder)
			srvCfg, srv := mcptest.HTTP(t)
			broker := *srvCfg
			broker.Name = "broker"
			f.cfg.MCPServers["broker"] = &broker
			served := countCalls(srv.MCP())
			before := hashes(t, f.folder.Dir())

			cand := "model: other\ninstructions: You are the CANDIDATE desk.\nmcp:\n  broker: {tools: [quote, echo, place_order]" + tc.approve + "}\n"
			rep, out, err := f.run(t, cand, "", func(o *replay.Options) {
				o.AllowTools = []string{"mcp__broker__echo", "mcp__broker__place_order"}
			})
			if err != nil {
				t.Fatal(err)
			}
			sameHashes(t, before, hashes(t, f.folder.Dir()))

			if got := served.list(); len(got) != 1 || got[0] != `echo {"text":"hello from the replay"}` {
				t.Errorf("the MCP server received %q; want exactly the one echo call", got)
			}
			if n := srv.Orders(); n != 0 {
				t.Errorf("the MCP server placed %d orders", n)
			}
			calls := rep.Triggers[2].Candidate.ToolCalls
			if len(calls) != 2 {
				t.Fatalf("t03's candidate calls %+v, want 2", calls)
			}
			if c := calls[0]; c.Tool != "mcp__broker__echo" || c.Outcome != replay.CallRun || c.Result != "hello from the replay" || c.Approval {
				t.Errorf("echo: %+v; want run for real, its result the server's", c)
			}
			if c := calls[1]; c.Tool != "mcp__broker__place_order" || c.Outcome != replay.CallRefused || !c.Approval ||
				!strings.HasPrefix(c.Result, replay.NotRunText+"mcp__broker__place_order") {
				t.Errorf("place_order: %+v; want refused, under approve", c)
			}
			var listed []replay.Approval
			for _, a := range rep.Approvals {
				if a.Trigger == "t03" {
					listed = append(listed, a)
				}
			}
			if len(listed) != 1 || listed[0].Tool != "mcp__broker__place_order" || listed[0].Outcome != replay.CallRefused {
				t.Errorf("the report's approvals of t03 %+v (all: %+v); want place_order listed, refused", listed, rep.Approvals)
			}
			for _, a := range rep.Candidate.AllowTools {
				if a == "mcp__broker__place_order" {
					t.Errorf("the report says place_order could run for real: %v", rep.Candidate.AllowTools)
				}
			}

			// Nothing was queued for an operator: no decision in the sandbox.
			sb, err := memory.OpenFolder(filepath.Join(out, replay.SandboxDir, "desks", "main"), "main", clock.Real().Now)
			if err != nil {
				t.Fatal(err)
			}
			infos, err := sb.ListSessions()
			if err != nil || len(infos) == 0 {
				t.Fatalf("the sandbox's sessions: %v, %v", infos, err)
			}
			for _, info := range infos {
				recs, err := sb.ReadSession(info.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					if r.Kind == router.RecordApproval {
						t.Errorf("the sandbox's session %s holds an approval record: %+v", info.ID, r)
					}
				}
			}
		})
	}
}
