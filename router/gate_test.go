package router_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// toolset is a Toolset whose tools and notes a test changes between turns.
type toolset struct {
	mu    sync.Mutex
	tools []router.Tool
	notes []string
}

func (s *toolset) Tools() []router.Tool { s.mu.Lock(); defer s.mu.Unlock(); return s.tools }
func (s *toolset) Notes() []string      { s.mu.Lock(); defer s.mu.Unlock(); return s.notes }

func (s *toolset) set(tools []router.Tool, notes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools, s.notes = tools, notes
}

// orderTool is an acting tool that counts its runs, behind gate.
func orderTool(runs *int, gate router.Gate) router.Tool {
	return router.Tool{
		Spec: router.ToolSpec{Name: "mcp__broker__place_order", Description: "place an order",
			Schema: json.RawMessage(`{"type":"object","properties":{"qty":{"type":"integer"}},"required":["qty"]}`)},
		Server: "broker",
		Gate:   gate,
		Run: func(context.Context, json.RawMessage) (string, error) {
			*runs++
			return "ORDER 1 accepted", nil
		},
	}
}

func offered(req router.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func TestToolsetIsAskedAtEachTurn(t *testing.T) {
	g := newLoopRig(t)
	runs := 0
	ts := &toolset{}
	ts.set(nil, "the tools of MCP server broker (mcp__broker__*) are unavailable: connection refused")
	p := &playbook{steps: []router.Response{
		{ToolCalls: []router.ToolCall{call("c1", "mcp__broker__place_order", `{"qty":5}`)}},
		{Text: "could not trade"},
		{ToolCalls: []router.ToolCall{call("c2", "mcp__broker__place_order", `{"qty":5}`)}},
		{Text: "traded"},
	}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Toolsets: []router.Toolset{ts}})
	g.send(r, "t1", "buy 5")
	reqs := p.requests()
	if offered(reqs[0], "mcp__broker__place_order") {
		t.Fatal("a tool of a server that is down was offered")
	}
	if !strings.Contains(reqs[0].System, "## Tools unavailable now") || !strings.Contains(reqs[0].System, "connection refused") {
		t.Fatalf("the system prompt does not say which tools are unavailable:\n%s", reqs[0].System)
	}
	recs := g.sessionRecords(r)
	res := toolResults(recs)
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Text, "no tool named mcp__broker__place_order") || runs != 0 {
		t.Fatalf("the call of an unoffered tool: %+v, runs %d", res, runs)
	}

	ts.set([]router.Tool{orderTool(&runs, nil)})
	g.send(r, "t2", "buy 5 again")
	reqs = p.requests()
	last := reqs[len(reqs)-2]
	if !offered(last, "mcp__broker__place_order") || strings.Contains(last.System, "Tools unavailable") {
		t.Fatalf("the server is back, but the next turn does not offer its tool (or still says it is unavailable)")
	}
	if runs != 1 {
		t.Fatalf("runs = %d, want 1", runs)
	}
}

func TestGateDecidesAndTheDecisionIsRecorded(t *testing.T) {
	for _, tt := range []struct {
		name     string
		verdict  router.Verdict
		runs     int
		outcome  string
		decision string
	}{
		{"approved", router.Verdict{Run: true, Decision: &router.Decision{ID: "ab12", Outcome: router.DecisionApproved, By: "ops"}}, 1, router.OutcomeOK, router.DecisionApproved},
		{"denied", router.Verdict{Outcome: router.OutcomeDenied, Result: "denied by ops: too big",
			Decision: &router.Decision{ID: "ab12", Outcome: router.DecisionDenied, By: "ops", Reason: "too big"}}, 0, router.OutcomeDenied, router.DecisionDenied},
		{"expired", router.Verdict{Outcome: router.OutcomeExpired, Result: "expired",
			Decision: &router.Decision{ID: "ab12", Outcome: router.DecisionExpired, By: "deskd"}}, 0, router.OutcomeExpired, router.DecisionExpired},
		{"refused without a decision", router.Verdict{Result: "over the day's limit"}, 0, router.OutcomeRefused, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newLoopRig(t)
			w := eventtest.Watch[event.ToolCalled](t, g.bus)
			runs := 0
			var asked []router.GateCall
			gate := func(_ context.Context, c router.GateCall) router.Verdict {
				asked = append(asked, c)
				g.clock.Advance(30 * time.Second) // the operator takes half a minute
				v := tt.verdict
				if v.Decision != nil {
					d := *v.Decision
					d.Call, d.Tool, d.Arguments, d.DecidedAt = c.ID, c.Tool, c.Arguments, g.clock.Now()
					v.Decision = &d
				}
				return v
			}
			p := &playbook{steps: []router.Response{
				{ToolCalls: []router.ToolCall{call("c1", "mcp__broker__place_order", `{"qty":5}`)}},
				{Text: "over"},
			}}
			r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Tools: []router.Tool{orderTool(&runs, gate)}})
			g.send(r, "t1", "buy 5")
			if runs != tt.runs {
				t.Fatalf("runs = %d, want %d", runs, tt.runs)
			}
			if len(asked) != 1 || asked[0].Desk != "main" || asked[0].Trigger != "t1" || asked[0].ID != "c1" ||
				asked[0].Session != r.SessionID() || string(asked[0].Arguments) != `{"qty":5}` {
				t.Fatalf("the gate was asked %+v", asked)
			}
			recs := g.sessionRecords(r)
			var dec *memory.Record
			for i := range recs {
				if recs[i].Type == memory.RecordEvent && recs[i].Kind == router.RecordApproval {
					dec = &recs[i]
				}
			}
			if tt.decision == "" {
				if dec != nil {
					t.Fatalf("a decision was recorded for a refusal: %+v", dec)
				}
			} else {
				if dec == nil {
					t.Fatal("no decision in the session")
				}
				var d router.Decision
				if err := json.Unmarshal(dec.Data, &d); err != nil || d.Outcome != tt.decision || d.By == "" || d.Call != "c1" ||
					d.Tool != "mcp__broker__place_order" || string(d.Arguments) != `{"qty":5}` || dec.ToolCallID != "c1" {
					t.Fatalf("decision record %+v (%v)", d, err)
				}
			}
			res := toolResults(recs)
			if len(res) != 1 || res[0].DurationMS != 30000 {
				t.Fatalf("tool record %+v: want one, of 30000 ms", res)
			}
			if tt.runs == 0 && (!res[0].IsError || res[0].Text != tt.verdict.Result) {
				t.Fatalf("the model heard %q (error %v), want %q", res[0].Text, res[0].IsError, tt.verdict.Result)
			}
			e := eventtest.Next[event.ToolCalled](w)
			if e.Outcome != tt.outcome || e.Server != "broker" || e.Tool != "mcp__broker__place_order" || e.DurationMS != 30000 || e.Desk != "main" || e.Call != "c1" {
				t.Fatalf("tool.called %+v, want outcome %s", e, tt.outcome)
			}
		})
	}
}

func TestToolCalledForEveryOutcome(t *testing.T) {
	g := newLoopRig(t)
	w := eventtest.Watch[event.ToolCalled](t, g.bus)
	p := &playbook{steps: []router.Response{
		{ToolCalls: []router.ToolCall{call("c1", "note", `{"text":"a"}`), call("c2", "nope", `{}`), call("c3", "note", `{"text":""}`)}},
		{Text: "done"},
	}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	g.send(r, "t1", "go")
	want := []string{router.OutcomeOK, router.OutcomeRefused, router.OutcomeError}
	for i, o := range want {
		e := eventtest.Next[event.ToolCalled](w)
		if e.Outcome != o || e.Server != "" {
			t.Fatalf("event %d: %+v, want outcome %s", i, e, o)
		}
		if o != router.OutcomeOK && e.Error == "" {
			t.Fatalf("event %d has no error text: %+v", i, e)
		}
	}
}

// toolResults are the tool records of recs.
func toolResults(recs []memory.Record) []memory.Record {
	var out []memory.Record
	for _, r := range recs {
		if r.Type == memory.RecordTool {
			out = append(out, r)
		}
	}
	return out
}

func TestScriptedCallsTheToolItIsToldTo(t *testing.T) {
	g := newLoopRig(t)
	var got string
	echo := router.Tool{
		Spec: router.ToolSpec{Name: "mcp__everything__echo", Schema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
		Run: func(_ context.Context, args json.RawMessage) (string, error) {
			got = string(args)
			return "Echo: hi", nil
		},
	}
	r := g.router(router.Settings{Route: []router.Model{{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}}},
		Tools: []router.Tool{echo}})
	reply, err := r.Send(context.Background(), triggers.Trigger{ID: "t1", Text: "look this up\nCALL: mcp__everything__echo {\"message\":\"hi\"}"})
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"message":"hi"}` || reply.ToolCalls != 1 {
		t.Fatalf("the tool got %q (%d calls)", got, reply.ToolCalls)
	}
	if !strings.Contains(reply.Text, router.ScriptedLabel) || !strings.Contains(reply.Text, `Tool mcp__everything__echo answered: "Echo: hi"`) {
		t.Fatalf("reply %q", reply.Text)
	}
	// A tool that is not offered is not called.
	reply, err = r.Send(context.Background(), triggers.Trigger{ID: "t2", Text: "CALL: mcp__broker__place_order {}"})
	if err != nil || reply.ToolCalls != 0 {
		t.Fatalf("an unoffered tool: %d calls, %v", reply.ToolCalls, err)
	}
}

// TestDecisionIsRecordedBeforeTheCallRuns: an approved call's decision is
// in the session file before the tool runs, so that a crash during the
// call cannot leave an order without its approval on record.
func TestDecisionIsRecordedBeforeTheCallRuns(t *testing.T) {
	g := newLoopRig(t)
	var session string // the router's lock is held while the tool runs: read the file by the gate's session
	seen := false
	gate := func(_ context.Context, c router.GateCall) router.Verdict {
		session = c.Session
		return router.Verdict{Run: true, Decision: &router.Decision{ID: "ab12", Call: c.ID, Tool: c.Tool, Outcome: router.DecisionApproved, By: "ops"}}
	}
	tool := router.Tool{
		Spec: router.ToolSpec{Name: "mcp__broker__place_order", Schema: json.RawMessage(`{"type":"object"}`)},
		Gate: gate,
		Run: func(context.Context, json.RawMessage) (string, error) {
			recs, err := g.folder.ReadSession(session)
			if err != nil {
				t.Error(err)
			}
			for _, rec := range recs {
				seen = seen || rec.Kind == router.RecordApproval
			}
			return "ORDER 1 accepted", nil
		},
	}
	p := &playbook{steps: []router.Response{{ToolCalls: []router.ToolCall{call("c1", "mcp__broker__place_order", `{}`)}}, {Text: "done"}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Tools: []router.Tool{tool}})
	g.send(r, "t1", "buy")
	if !seen {
		t.Fatal("the tool ran before its approval was in the session file")
	}
}

// TestToolCalledSaysWhenNoToolHasTheName: a call of a name the desk has no
// tool of is announced as unknown (the metrics keep one series for them).
func TestToolCalledSaysWhenNoToolHasTheName(t *testing.T) {
	g := newLoopRig(t)
	w := eventtest.Watch[event.ToolCalled](t, g.bus)
	p := &playbook{steps: []router.Response{{ToolCalls: []router.ToolCall{call("c1", "made_up_1", `{}`), call("c2", "note", `{"text":"x"}`)}}, {Text: "done"}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	g.send(r, "t1", "go")
	if e := eventtest.Next[event.ToolCalled](w); !e.Unknown || e.Tool != "made_up_1" {
		t.Fatalf("made_up_1: %+v", e)
	}
	if e := eventtest.Next[event.ToolCalled](w); e.Unknown {
		t.Fatalf("note is a tool of the desk: %+v", e)
	}
}

// refusingToolset is a toolset that knows why it does not offer a tool.
type refusingToolset struct{ toolset }

func (*refusingToolset) Refusal(tool string) (string, bool, bool) {
	switch {
	case tool == "mcp__broker__quote":
		return tool + " is unavailable now", true, true
	case strings.HasPrefix(tool, "mcp__broker__"):
		return tool + " is not allowed for this desk", false, true
	}
	return "", false, false
}

// TestARefuserSaysWhyAToolIsNotOffered: a call of a tool the desk does
// not offer gets the reason of the toolset that knows it; other names get
// "no tool named"; the turn goes on. Only a tool the desk may call (its
// server down) is announced as known, not unknown.
func TestARefuserSaysWhyAToolIsNotOffered(t *testing.T) {
	g := newLoopRig(t)
	w := eventtest.Watch[event.ToolCalled](t, g.bus)
	p := &playbook{steps: []router.Response{
		{ToolCalls: []router.ToolCall{call("c1", "mcp__broker__cancel_all", `{}`), call("c2", "frobnicate", `{}`), call("c3", "mcp__broker__quote", `{}`)}},
		{Text: "ok"},
	}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Toolsets: []router.Toolset{&refusingToolset{}}})
	g.send(r, "t1", "go")
	res := toolResults(g.sessionRecords(r))
	if len(res) != 3 || res[0].Text != "error: mcp__broker__cancel_all is not allowed for this desk" || !res[0].IsError ||
		!strings.HasPrefix(res[1].Text, "error: no tool named frobnicate") || res[2].Text != "error: mcp__broker__quote is unavailable now" {
		t.Fatalf("results %+v", res)
	}
	for _, want := range []bool{true, true, false} {
		if e := eventtest.Next[event.ToolCalled](w); e.Unknown != want {
			t.Errorf("tool.called %+v: unknown want %v", e, want)
		}
	}
}
