package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/router"
)

// newFakeApprovals holds two calls on desk main (a1b2c3d4, then e5f6a7b8)
// and one on desk other.
func newFakeApprovals() *httpapitest.Approvals {
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	p := func(id, deskName, tool, args string, ago time.Duration) approval.Pending {
		return approval.Pending{ID: id, Desk: deskName, Call: "call-" + id, Tool: tool, Arguments: json.RawMessage(args),
			RequestedAt: at.Add(-ago), ExpiresAt: at.Add(2*time.Minute - ago)}
	}
	fa := &httpapitest.Approvals{}
	fa.Add(
		p("a1b2c3d4", "main", "mcp__broker__place_order", `{"symbol":"INFY","qty":10,"side":"buy"}`, time.Minute),
		p("e5f6a7b8", "main", "mcp__broker__place_order", `{"symbol":"TCS","qty":5,"side":"sell"}`, 30*time.Second),
		p("0badf00d", "other", "mcp__broker__place_order", `{"symbol":"WIPRO","qty":1,"side":"buy"}`, 10*time.Second),
	)
	return fa
}

// ids returns the ids of ps, in order.
func ids(ps []approval.Pending) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return strings.Join(out, ",")
}

// TestAPIApprovalsList: GET /v1/approvals lists every desk's waiting calls
// with their tool and arguments; GET /v1/desks/main/approvals the desk's;
// an unknown desk is the usual 404; none waiting is [] (never null).
func TestAPIApprovalsList(t *testing.T) {
	fa := newFakeApprovals()
	h := httpapitest.Start(t, httpapitest.Options{Approvals: fa})
	status, _, body := h.Call("GET", "/v1/approvals", "")
	all := httpapitest.Decode[httpapi.ApprovalsResponse](t, body)
	if status != 200 || ids(all.Approvals) != "a1b2c3d4,e5f6a7b8,0badf00d" {
		t.Fatalf("GET /v1/approvals = %d %s", status, body)
	}
	var args bytes.Buffer
	if a := all.Approvals[0]; a.Tool != "mcp__broker__place_order" || json.Compact(&args, a.Arguments) != nil || args.String() != `{"symbol":"INFY","qty":10,"side":"buy"}` ||
		a.Desk != "main" || a.ExpiresAt.IsZero() {
		t.Errorf("first approval = %+v", a)
	}
	status, _, body = h.Call("GET", "/v1/desks/main/approvals", "")
	if got := httpapitest.Decode[httpapi.ApprovalsResponse](t, body); status != 200 || ids(got.Approvals) != "a1b2c3d4,e5f6a7b8" {
		t.Errorf("GET /v1/desks/main/approvals = %d %s", status, body)
	}
	status, _, body = h.Call("GET", "/v1/desks/nope/approvals", "")
	if e := httpapitest.Decode[map[string]string](t, body); status != 404 || !strings.Contains(e["error"], `unknown desk "nope" (desks: main)`) {
		t.Errorf("GET /v1/desks/nope/approvals = %d %s", status, body)
	}
	for _, p := range fa.Pending("") {
		fa.Drop(p.ID)
	}
	status, _, body = h.Call("GET", "/v1/desks/main/approvals", "")
	if status != 200 || !strings.Contains(body, `"approvals": []`) {
		t.Errorf("GET with none waiting = %d %s, want approvals []", status, body)
	}
}

// TestAPIApprove: approve answers the decision (by the body's by, default
// "api"), and the call no longer waits; a second decision on it is 404
// naming the id.
func TestAPIApprove(t *testing.T) {
	fa := newFakeApprovals()
	h := httpapitest.Start(t, httpapitest.Options{Approvals: fa})
	status, _, body := h.Call("POST", "/v1/desks/main/approvals/a1b2c3d4/approve", "")
	d := httpapitest.Decode[router.Decision](t, body)
	if status != 200 || d.ID != "a1b2c3d4" || d.Outcome != router.DecisionApproved || d.By != "api" || d.Tool != "mcp__broker__place_order" {
		t.Fatalf("POST approve = %d %s", status, body)
	}
	if got := ids(fa.Pending("main")); got != "e5f6a7b8" {
		t.Errorf("waiting after the approval = %s, want e5f6a7b8", got)
	}
	status, _, body = h.Call("POST", "/v1/desks/main/approvals/a1b2c3d4/deny", `{"by": "bob"}`)
	if e := httpapitest.Decode[map[string]string](t, body); status != 404 || !strings.Contains(e["error"], `desk main has no tool call "a1b2c3d4" waiting`) {
		t.Errorf("POST deny of a decided call = %d %s, want 404 naming it", status, body)
	}
	if len(fa.Decisions()) != 1 {
		t.Errorf("decisions = %+v, want the one approval", fa.Decisions())
	}
}

// TestAPIDeny: deny with a reason and a name answers the denial with both;
// a call of another desk is not this desk's (404); an unknown desk 404.
func TestAPIDeny(t *testing.T) {
	fa := newFakeApprovals()
	h := httpapitest.Start(t, httpapitest.Options{Approvals: fa})
	status, _, body := h.Call("POST", "/v1/desks/main/approvals/e5f6a7b8/deny", `{"reason": "  too large for today  ", "by": "alice"}`)
	d := httpapitest.Decode[router.Decision](t, body)
	if status != 200 || d.ID != "e5f6a7b8" || d.Outcome != router.DecisionDenied || d.By != "alice" || d.Reason != "too large for today" {
		t.Fatalf("POST deny = %d %s", status, body)
	}
	for _, tt := range []struct{ path, err string }{
		{"/v1/desks/main/approvals/0badf00d/deny", `desk main has no tool call "0badf00d"`},
		{"/v1/desks/main/approvals/nope/approve", `no tool call "nope"`},
		{"/v1/desks/nope/approvals/0badf00d/deny", `unknown desk "nope"`},
	} {
		status, _, body := h.Call("POST", tt.path, "")
		if e := httpapitest.Decode[map[string]string](t, body); status != 404 || !strings.Contains(e["error"], tt.err) {
			t.Errorf("POST %s = %d %s, want 404 %q", tt.path, status, body, tt.err)
		}
	}
	if got := ids(fa.Pending("")); got != "a1b2c3d4,0badf00d" {
		t.Errorf("waiting = %s, want a1b2c3d4,0badf00d", got)
	}
}

// TestAPIDecisionBadBody: a body that is not {"reason", "by"}, a reason
// of two lines or over 500 bytes is 400 and decides nothing.
func TestAPIDecisionBadBody(t *testing.T) {
	fa := newFakeApprovals()
	h := httpapitest.Start(t, httpapitest.Options{Approvals: fa})
	for _, tt := range []struct{ body, err string }{
		{`{"reason": "no", "approve": true}`, `unknown field "approve"`},
		{`not json`, `want a JSON body {"reason": "...", "by": "..."}`},
		{`{"reason": "one\ntwo"}`, "reason: one line"},
		{`{"reason": "` + strings.Repeat("x", 501) + `"}`, "reason: 501 bytes, at most 500"},
		{`{"by": "a\nb"}`, "by: one line"},
		{`{"by": "` + strings.Repeat("b", 129) + `"}`, "by: 129 bytes, at most 128"},
		{`{"reason": "ok \u001b[2J"}`, "no control characters"},
		{`{"by": "eve\u0007"}`, "no control characters"},
	} {
		status, _, body := h.Call("POST", "/v1/desks/main/approvals/a1b2c3d4/deny", tt.body)
		if e := httpapitest.Decode[map[string]string](t, body); status != 400 || !strings.Contains(e["error"], tt.err) {
			t.Errorf("POST deny %.40s = %d %s, want 400 %q", tt.body, status, body, tt.err)
		}
	}
	if len(fa.Decisions()) != 0 || len(fa.Pending("main")) != 2 {
		t.Errorf("a refused body decided: %+v", fa.Decisions())
	}
	status, _, body := h.Call("POST", "/v1/desks/main/approvals/a1b2c3d4/deny", `{"reason": "`+strings.Repeat("x", 500)+`"}`)
	if status != 200 {
		t.Errorf("POST deny with a reason of 500 bytes = %d %s, want 200", status, body)
	}
}

// TestAPIApprovalsFeed403: a feed's token reaches none of the approval
// endpoints (403), and decides nothing; the operator's token does.
func TestAPIApprovalsFeed403(t *testing.T) {
	fa := newFakeApprovals()
	h := httpapitest.Start(t, httpapitest.Options{Approvals: fa, Token: "op-token", FeedToken: "feed-token"})
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/approvals"},
		{"GET", "/v1/desks/main/approvals"},
		{"POST", "/v1/desks/main/approvals/a1b2c3d4/approve"},
		{"POST", "/v1/desks/main/approvals/a1b2c3d4/deny"},
	} {
		status, _, body := h.Call(tt.method, tt.path, "", "Authorization", "Bearer feed-token")
		if status != http.StatusForbidden || !strings.Contains(body, "needs the operator's credential") {
			t.Errorf("%s %s with the feed's token = %d %s, want 403", tt.method, tt.path, status, body)
		}
		if status, _, _ := h.Call(tt.method, tt.path, "", "Authorization", "Bearer wrong"); status != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token = %d, want 401", tt.method, tt.path, status)
		}
	}
	if len(fa.Decisions()) != 0 {
		t.Errorf("a feed decided: %+v", fa.Decisions())
	}
	if status, _, body := h.Call("GET", "/v1/approvals", "", "Authorization", "Bearer op-token"); status != 200 {
		t.Errorf("GET /v1/approvals with the operator's token = %d %s", status, body)
	}
}

// TestAPIApprovalsNotConfigured: without Approvals every endpoint is 404
// "approvals are not configured".
func TestAPIApprovalsNotConfigured(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/approvals"},
		{"GET", "/v1/desks/main/approvals"},
		{"POST", "/v1/desks/main/approvals/a1b2c3d4/approve"},
		{"POST", "/v1/desks/main/approvals/a1b2c3d4/deny"},
	} {
		status, _, body := h.Call(tt.method, tt.path, "")
		if e := httpapitest.Decode[map[string]string](t, body); status != 404 || e["error"] != "approvals are not configured" {
			t.Errorf("%s %s = %d %s, want 404 approvals are not configured", tt.method, tt.path, status, body)
		}
	}
}

// TestClientApprovals: the client lists every desk's and one desk's
// calls, approves and denies (with the reason and by), and returns the
// API's 404 as an *httpapi.Error.
func TestClientApprovals(t *testing.T) {
	fa := newFakeApprovals()
	h := httpapitest.Start(t, httpapitest.Options{Approvals: fa, Token: "op-token"})
	c := h.Client("op-token")
	ctx := context.Background()
	all, err := c.Approvals(ctx, "")
	if err != nil || ids(all.Approvals) != "a1b2c3d4,e5f6a7b8,0badf00d" || !all.AsOf.Equal(h.Clock.Now()) {
		t.Fatalf("Approvals(all) = %v as of %v, %v; want as of deskd's clock %v", ids(all.Approvals), all.AsOf, err, h.Clock.Now())
	}
	mine, err := c.Approvals(ctx, "main")
	if err != nil || ids(mine.Approvals) != "a1b2c3d4,e5f6a7b8" {
		t.Fatalf("Approvals(main) = %v, %v", ids(mine.Approvals), err)
	}
	d, err := c.Decide(ctx, "main", "a1b2c3d4", true, httpapi.DecisionRequest{By: "alice"})
	if err != nil || d.Outcome != router.DecisionApproved || d.By != "alice" {
		t.Errorf("Decide(approve) = %+v, %v", d, err)
	}
	d, err = c.Decide(ctx, "main", "e5f6a7b8", false, httpapi.DecisionRequest{By: "bob", Reason: "not now"})
	if err != nil || d.Outcome != router.DecisionDenied || d.By != "bob" || d.Reason != "not now" {
		t.Errorf("Decide(deny) = %+v, %v", d, err)
	}
	_, err = c.Decide(ctx, "main", "e5f6a7b8", false, httpapi.DecisionRequest{})
	var ae *httpapi.Error
	if !errors.As(err, &ae) || ae.Status != 404 || !strings.Contains(ae.Message, `"e5f6a7b8"`) {
		t.Errorf("Decide(decided) = %v, want the API's 404", err)
	}
	if _, err := c.Approvals(ctx, "nope"); !httpapi.UnknownDesk(err) {
		t.Errorf("Approvals(nope) = %v, want unknown desk", err)
	}
}
