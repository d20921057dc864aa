package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/router"
)

// TestBuildHoldsTheDecisions: every operator's decision on a tool call of
// the day (approved, denied), with who made it and the call's arguments,
// is in approvals.jsonl and listed in the manifest.
func TestBuildHoldsTheDecisions(t *testing.T) {
	s := memorytest.New(t)
	d := memorytest.NewLive(t, s, "2026-03-02T04:00:00Z")
	decisions := []router.Decision{
		{ID: "a1b2c3d4", Outcome: router.DecisionApproved, By: "operator"},
		{ID: "e5f6a7b8", Outcome: router.DecisionDenied, By: "risk", Reason: "over the desk's size"},
	}
	runs := 0
	gate := func(_ context.Context, c router.GateCall) router.Verdict {
		dec := decisions[0]
		decisions = decisions[1:]
		dec.Call, dec.Tool, dec.Arguments = c.ID, c.Tool, c.Arguments
		if dec.Outcome == router.DecisionApproved {
			return router.Verdict{Run: true, Decision: &dec}
		}
		return router.Verdict{Outcome: router.OutcomeDenied, Result: "denied", Decision: &dec}
	}
	order := router.Tool{
		Spec:   router.ToolSpec{Name: "mcp__broker__place_order", Schema: json.RawMessage(`{"type":"object"}`)},
		Server: "broker", Gate: gate,
		Run: func(context.Context, json.RawMessage) (string, error) { runs++; return "ORDER 1 accepted", nil },
	}
	scripted := router.Model{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}}
	if err := d.Router.Configure(router.Settings{Route: []router.Model{scripted}, Tools: []router.Tool{order}}); err != nil {
		t.Fatal(err)
	}
	d.Turn("buy", "CALL: mcp__broker__place_order {\"symbol\":\"INFY\",\"qty\":5}")
	d.Turn("sell", "CALL: mcp__broker__place_order {\"symbol\":\"TCS\",\"qty\":500}")
	if runs != 1 {
		t.Fatalf("the order tool ran %d times, want 1 (the approved call)", runs)
	}

	files, _ := bundleOf(t, s, "2026-03-02")
	lines := strings.Split(strings.TrimSpace(files["approvals.jsonl"]), "\n")
	if len(lines) != 2 {
		t.Fatalf("approvals.jsonl:\n%s", files["approvals.jsonl"])
	}
	var first, second decisionLine
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first.Trigger != "buy" || first.Outcome != router.DecisionApproved || first.By != "operator" || first.Session != d.Router.SessionID() ||
		!strings.Contains(string(first.Arguments), "INFY") {
		t.Errorf("first decision %+v", first)
	}
	if second.Trigger != "sell" || second.Outcome != router.DecisionDenied || second.By != "risk" || second.Reason != "over the desk's size" {
		t.Errorf("second decision %+v", second)
	}
	m := files["MANIFEST.txt"]
	for _, want := range []string{
		"operator decisions on tool calls: 2 (approvals.jsonl):",
		`mcp__broker__place_order call a1b2c3d4 (session ` + d.Router.SessionID() + `, trigger buy) approved by operator; arguments {"symbol":"INFY","qty":5}`,
		`call e5f6a7b8 (session ` + d.Router.SessionID() + `, trigger sell) denied by risk: over the desk's size;`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", want, m)
		}
	}
}
