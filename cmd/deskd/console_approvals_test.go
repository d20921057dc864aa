package main

// The console's block of the tool calls that wait for a decision, in
// headless Chromium, over the real API and console with a stub of the
// approval queue (the daemon's wiring of approval.Queue is tested end to
// end elsewhere).

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/console"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/router"
)

// TestConsoleBrowserApprovals: a waiting call shows on its desk's row and
// page with its tool, its arguments pretty-printed as text (a hostile
// argument stays text) and the time left; one requested later appears
// live on approval.requested; Deny asks for a reason in the dialog and
// sends it; Approve approves; deskd's refusal of a call that no longer
// waits is shown in the dialog.
func TestConsoleBrowserApprovals(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	stub := &httpapitest.Approvals{}
	h := httpapitest.Start(t, httpapitest.Options{Approvals: stub, Console: console.Handler()})
	now := h.Clock.Now()
	pending := func(id, args string) approval.Pending {
		return approval.Pending{ID: id, Desk: "main", Call: "c-" + id, Tool: "mcp__broker__place_order", Arguments: json.RawMessage(args),
			RequestedAt: now, ExpiresAt: now.Add(2 * time.Minute)}
	}
	stub.Add(pending("a1b2c3d4", `{"symbol": "<img src=x id=pwn onerror=alert(1)>", "qty": 10, "account": "`+strings.Repeat("X", 300)+`"}`))
	p := openConsole(t, 1280, 900)
	p.do(t, "open the console", chromedp.Navigate(h.URL()+"/"))

	row := `document.querySelector('tr.desk-row[data-desk="main"]')`
	item := func(id string) string { return row + `.querySelector('.approval[data-approval="` + id + `"]')` }
	p.waitTrue(t, "the row shows call a1b2c3d4", row+` && `+item("a1b2c3d4")+` !== null`)
	args := evalJS[string](t, p, item("a1b2c3d4")+`.querySelector(".approval-args").textContent`)
	if !strings.Contains(args, "\n  \"symbol\": \"<img src=x id=pwn onerror=alert(1)>\",\n  \"qty\": 10,\n") {
		t.Errorf("the arguments read %q, want them pretty-printed as text", args)
	}
	if evalJS[bool](t, p, `document.getElementById("pwn") !== null`) {
		t.Error("an argument became HTML")
	}
	block := evalJS[string](t, p, item("a1b2c3d4")+`.innerText`)
	if !strings.Contains(block, "mcp__broker__place_order") || !strings.Contains(block, "expires in 1:") && !strings.Contains(block, "expires in 2:") {
		t.Errorf("the call's block reads %q: want the tool and the time left", block)
	}

	// Live: a call requested now appears without a reload.
	stub.Add(pending("e5f6a7b8", `{"symbol": "TCS", "qty": 5}`))
	event.Publish(h.Bus, event.ApprovalRequested{Header: event.Header{At: now, Desk: "main"}, ID: "e5f6a7b8", Call: "c-e5f6a7b8",
		Tool: "mcp__broker__place_order", Arguments: json.RawMessage(`{"symbol": "TCS", "qty": 5}`), ExpiresAt: now.Add(2 * time.Minute)})
	p.waitTrue(t, "call e5f6a7b8 appears live", item("e5f6a7b8")+` !== null`)
	if text := evalJS[string](t, p, row+`.querySelector('[data-label="Attention"]').innerText`); !strings.Contains(text, "2 tool calls wait for your decision") || strings.Contains(text, "OK") {
		t.Errorf("the row's attention reads %q: want the waiting calls counted, not OK", text)
	}
	if png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot()); err == nil {
		writeApprovalShot(t, "console-approvals-row.png", png)
	}

	// The block fits the table at 1280 px and a phone's width, a long
	// argument included.
	if sw, cw := evalJS[int](t, p, `document.querySelector("#desks").parentElement.scrollWidth`), evalJS[int](t, p, `document.querySelector("#desks").parentElement.clientWidth`); sw > cw {
		t.Errorf("at 1280 px the desks' table is %d px wide in a box of %d px: it scrolls", sw, cw)
	}
	p.do(t, "narrow the tab to 390 px", chromedp.EmulateViewport(390, 844))
	for view, box := range map[string]string{"#/": "#desk-rows", "#/desk/main": "#dv-status"} {
		p.do(t, "open "+view, chromedp.Navigate(h.URL()+"/"+view))
		shown := `document.querySelector('` + box + ` .approval[data-approval="e5f6a7b8"]')`
		p.waitTrue(t, "the view "+view+" shows call e5f6a7b8", shown+` !== null && `+shown+`.offsetParent !== null`)
		if sw, iw := evalJS[int](t, p, `document.documentElement.scrollWidth`), evalJS[int](t, p, `window.innerWidth`); sw > iw {
			t.Errorf("at 390 px the page %s scrolls horizontally: scrollWidth %d > innerWidth %d", view, sw, iw)
		}
	}
	p.do(t, "widen the tab to 1280 px", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(h.URL()+"/#/"))
	p.waitTrue(t, "the row shows call a1b2c3d4 again", row+` && `+item("a1b2c3d4")+` !== null`)

	// Deny asks for a reason.
	click := func(id, action string) {
		t.Helper()
		pressIn(t, p, item(id), action)
		p.waitTrue(t, "the dialog is open", `document.getElementById("dialog").open`)
	}
	click("a1b2c3d4", "deny")
	if focused := evalJS[string](t, p, `document.activeElement ? document.activeElement.name : ""`); focused != "reason" {
		t.Errorf("the deny dialog opens on %q, want the reason", focused)
	}
	p.do(t, "give a reason and deny", chromedp.SendKeys(`#dialog-fields input[name="reason"]`, "too large today"), chromedp.Click(chromedp.ID("dialog-confirm")))
	p.waitTrue(t, "the dialog closed and the call left the row", `!document.getElementById("dialog").open && `+item("a1b2c3d4")+` === null`)
	if d := stub.Decisions(); len(d) != 1 || d[0].ID != "a1b2c3d4" || d[0].Outcome != router.DecisionDenied || d[0].Reason != "too large today" || d[0].By != "console" {
		t.Errorf("decisions after Deny = %+v", d)
	}

	// The desk page shows the block too; Approve approves.
	p.do(t, "open desk main's page", chromedp.Navigate(h.URL()+"/#/desk/main"))
	page := `document.querySelector('#dv-status .approval[data-approval="e5f6a7b8"]')`
	p.waitTrue(t, "the desk page shows call e5f6a7b8", page+` !== null`)
	if png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot()); err == nil {
		writeApprovalShot(t, "console-approvals-page.png", png)
	}
	pressIn(t, p, page, "approve")
	p.waitTrue(t, "the dialog is open", `document.getElementById("dialog").open`)
	p.do(t, "confirm", chromedp.Click(chromedp.ID("dialog-confirm")))
	p.waitTrue(t, "the call left the page", `!document.getElementById("dialog").open && `+page+` === null`)
	if d := stub.Decisions(); len(d) != 2 || d[1].ID != "e5f6a7b8" || d[1].Outcome != router.DecisionApproved {
		t.Errorf("decisions after Approve = %+v", d)
	}

	// A call that no longer waits: deskd's refusal stays in the dialog.
	stub.Add(pending("0badf00d", `{}`))
	event.Publish(h.Bus, event.ApprovalRequested{Header: event.Header{At: now, Desk: "main"}, ID: "0badf00d", Tool: "mcp__broker__place_order"})
	late := `document.querySelector('#dv-status .approval[data-approval="0badf00d"]')`
	p.waitTrue(t, "the desk page shows call 0badf00d", late+` !== null`)
	stub.Drop("0badf00d")
	pressIn(t, p, late, "approve")
	p.waitTrue(t, "the dialog is open", `document.getElementById("dialog").open`)
	p.do(t, "confirm", chromedp.Click(chromedp.ID("dialog-confirm")))
	p.waitTrue(t, "the dialog shows deskd's refusal", `!document.getElementById("dialog-error").hidden && document.getElementById("dialog-error").textContent.includes('no tool call "0badf00d"')`)
	p.do(t, "cancel", chromedp.Click(chromedp.ID("dialog-cancel")))
	p.waitTrue(t, "the refused call left the page", late+` === null`)
}

// pressIn clicks the button of data-action action inside the element of
// the JavaScript expression box.
func pressIn(t *testing.T, p *consolePage, box, action string) {
	t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](box+`.querySelector('[data-action="`+action+`"]').click() === undefined`)); err != nil {
		t.Fatalf("click %s in %s: %v", action, box, err)
	}
}

// writeApprovalShot keeps the desk page's screenshot (DESKD_ARTIFACTS, if set).
func writeApprovalShot(t *testing.T, name string, png []byte) {
	t.Helper()
	if a := os.Getenv("DESKD_ARTIFACTS"); a != "" {
		if err := os.MkdirAll(a, 0o755); err != nil {
			t.Errorf("screenshot folder: %v", err)
		} else if err := os.WriteFile(filepath.Join(a, name), png, 0o644); err != nil {
			t.Errorf("write the screenshot: %v", err)
		}
	}
}

// withMCP serves api, adding mcp (the desk status's MCP servers, which
// the daemon fills in) to every desk of GET /v1/desks and GET
// /v1/desks/{desk}.
func withMCP(t *testing.T, api http.Handler, mcp []map[string]any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/v1/desks") || strings.Count(r.URL.Path, "/") > 3 {
			api.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, r)
		var body map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		if desks, ok := body["desks"].([]any); ok {
			for _, d := range desks {
				d.(map[string]any)["mcp"] = mcp
			}
		} else {
			body["mcp"] = mcp
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConsoleBrowserMCPServers: the desk's MCP servers show on its page,
// one that is not up in red with its error (also among the row's
// problems); one that is up does not.
func TestConsoleBrowserMCPServers(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	h := httpapitest.Start(t, httpapitest.Options{Console: console.Handler()})
	srv := withMCP(t, h.API, []map[string]any{
		{"name": "broker", "transport": "http", "state": "down", "error": "connect: connection refused <b>x</b>", "since": h.Clock.Now(), "restarts": 2},
		{"name": "quotes", "transport": "stdio", "state": "up", "tools": []string{"quote", "echo"}, "since": h.Clock.Now(), "restarts": 0},
	})
	p := openConsole(t, 1280, 900)
	p.do(t, "open the console", chromedp.Navigate(srv.URL+"/"))
	attention := `document.querySelector('tr.desk-row[data-desk="main"] [data-label="Attention"]')`
	p.waitTrue(t, "the row names the server that is down", attention+` !== null && `+attention+`.innerText.includes("MCP server broker down: connect: connection refused <b>x</b>")`)
	if text := evalJS[string](t, p, attention+`.innerText`); strings.Contains(text, "quotes") {
		t.Errorf("the row's attention names the server that is up: %q", text)
	}
	p.do(t, "open desk main's page", chromedp.Navigate(srv.URL+"/#/desk/main"))
	down := `document.querySelector('#dv-status .mcp[data-server="broker"]')`
	p.waitTrue(t, "the page lists the servers", down+` !== null && document.querySelector('#dv-status .mcp[data-server="quotes"]') !== null`)
	if cls := evalJS[string](t, p, down+`.className`); !strings.Contains(cls, "mcp-down") {
		t.Errorf("the down server's class is %q, want mcp-down", cls)
	}
	if color := evalJS[string](t, p, `getComputedStyle(`+down+`.querySelector(".mcp-error")).color`); color != "rgb(185, 28, 28)" {
		t.Errorf("the down server's error is in %s, want red (--bad)", color)
	}
	if text := evalJS[string](t, p, `document.querySelector('#dv-status .mcp[data-server="quotes"]').innerText`); !strings.Contains(text, "UP") || !strings.Contains(text, "2 tools") {
		t.Errorf("the up server reads %q", text)
	}
	if evalJS[bool](t, p, `document.querySelector("#dv-status b") !== null`) {
		t.Error("a server's error became HTML")
	}
}
