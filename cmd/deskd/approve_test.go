package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/router"
)

// TestClientApprovals: deskd approvals lists the waiting calls (all, or a
// desk's, or as JSON); deskd approve and deny decide by the user's login
// name (or --by) with --reason and print the decision; a decided id is
// an error naming it.
func TestClientApprovals(t *testing.T) {
	stub := &httpapitest.Approvals{}
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok", Approvals: stub})
	now := h.Clock.Now() // deskd's clock, which is not the terminal's
	stub.Add(
		approval.Pending{ID: "a1b2c3d4", Desk: "main", Tool: "mcp__broker__place_order", Arguments: json.RawMessage(`{"symbol": "INFY", "qty": 10}`),
			RequestedAt: now, ExpiresAt: now.Add(2 * time.Minute)},
		approval.Pending{ID: "e5f6a7b8", Desk: "main", Tool: "mcp__broker__place_order", Arguments: json.RawMessage(`{"symbol": "TCS", "qty": 5}`),
			RequestedAt: now, ExpiresAt: now.Add(90 * time.Second)},
	)
	cli := cliWithToken(t, h.URL(), "tok")
	code, out, errs := cli("approvals")
	if code != 0 || !strings.Contains(out, "a1b2c3d4") || !strings.Contains(out, `{"symbol":"INFY","qty":10}`) || !strings.Contains(out, "mcp__broker__place_order") ||
		!strings.Contains(out, "2m0s") || !strings.Contains(out, "1m30s") {
		t.Fatalf("approvals = %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli("approvals", "main", "--json")
	if code != 0 || !strings.Contains(out, `"id": "e5f6a7b8"`) || !strings.Contains(out, `"as_of": "2026-03-02T`) {
		t.Errorf("approvals main --json = %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli("approve", "main", "a1b2c3d4")
	if code != 0 || !strings.Contains(out, "call a1b2c3d4 (mcp__broker__place_order) of desk main approved by "+operator()) {
		t.Errorf("approve = %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli("deny", "main", "e5f6a7b8", "--reason", "too large", "--by", "ravi")
	if code != 0 || !strings.Contains(out, "denied by ravi") || !strings.Contains(out, ": too large") {
		t.Errorf("deny = %d\n%s%s", code, out, errs)
	}
	if d := stub.Decisions(); len(d) != 2 || d[1].Reason != "too large" || d[1].Outcome != router.DecisionDenied {
		t.Errorf("decisions = %+v", d)
	}
	code, out, errs = cli("approve", "main", "e5f6a7b8")
	if code == 0 || !strings.Contains(errs, `"e5f6a7b8"`) {
		t.Errorf("approve of a decided call = %d\n%s%s, want an error naming it", code, out, errs)
	}
	code, out, _ = cli("approvals")
	if code != 0 || !strings.Contains(out, "no tool call waits for a decision") {
		t.Errorf("approvals with none = %d\n%s", code, out)
	}
}

// TestApprovalsEscapeHostileText: a tool name, an argument or a decision's
// by and reason that could act on a terminal (an escape, a bidi override)
// reach it escaped; --json stays JSON.
func TestApprovalsEscapeHostileText(t *testing.T) {
	stub := &httpapitest.Approvals{}
	h := httpapitest.Start(t, httpapitest.Options{Approvals: stub, Token: "tok"})
	now := h.Clock.Now()
	args, err := json.Marshal(map[string]string{"note": hostileText})
	if err != nil {
		t.Fatal(err)
	}
	stub.Add(approval.Pending{ID: "a1b2c3d4", Desk: "main", Tool: "mcp__x__" + hostileText, Arguments: args, RequestedAt: now, ExpiresAt: now.Add(time.Minute)})
	cli := cliWithToken(t, h.URL(), "tok")
	code, out, errs := cli("approvals")
	if code != 0 || hasRaw(out) || !strings.Contains(out, "a1b2c3d4") {
		t.Errorf("approvals = %d %q %s", code, out, errs)
	}
	code, out, errs = cli("approvals", "--json")
	var got struct{ Approvals []approval.Pending }
	if code != 0 || hasRaw(out) || json.Unmarshal([]byte(out), &got) != nil || len(got.Approvals) != 1 || got.Approvals[0].Tool != "mcp__x__"+hostileText {
		t.Errorf("approvals --json = %d %q %s: want JSON of the same value, escaped", code, out, errs)
	}
	// A reason with an escape never gets in: deskd refuses it, and says why.
	code, out, errs = cli("deny", "main", "a1b2c3d4", "--by", "ops", "--reason", "no\x1b[2J")
	if code == 0 || !strings.Contains(errs, "no control characters") || hasRaw(errs) || len(stub.Decisions()) != 0 {
		t.Errorf("deny with an escape in its reason = %d %q %s", code, out, errs)
	}
	// A bidi override is not a control character: it is kept, and reaches
	// the terminal escaped.
	code, out, errs = cli("deny", "main", "a1b2c3d4", "--by", "ops\u202eevil", "--reason", "no\u202eway")
	if code != 0 || hasRaw(out) || !strings.Contains(out, "denied by ops") {
		t.Errorf("deny = %d %q %s", code, out, errs)
	}
}
