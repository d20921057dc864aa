package main

// The web console in real headless Chromium (chromedp), against an
// in-process daemon with scripted desks: the page lists the desks, follows
// the event stream, pauses a desk through its kill switch, fits a phone's
// width, and signs in with the operator's token.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// consoleChromium returns the path of the headless browser. It skips the
// test in the quick loop (the browser tests run with -tags slow) and when
// the browser is missing, except under CI (CI=true), which installs it.
// A browser test calls it first, so that a skip starts nothing.
func consoleChromium(t *testing.T) string {
	t.Helper()
	if !browserTests {
		t.Skip("a test in headless Chromium: it runs with -tags slow, as CI runs it")
	}
	const path = "/usr/bin/chromium"
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is missing (.ci/run installs Debian's chromium package): %v", path, err)
		}
		t.Skipf("%s is missing: install Debian's chromium package to run this test", path)
	}
	return path
}

// consolePage is a headless Chromium tab and what the page reported on
// its console that a test fails on: uncaught exceptions and refusals of
// the Content-Security-Policy.
type consolePage struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// openConsole starts headless Chromium (a fresh profile, no network of its
// own) with a tab of width x height; every step must end within 2 minutes.
func openConsole(t *testing.T, width, height int) *consolePage {
	t.Helper()
	bin := consoleChromium(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx)
	t.Cleanup(tcancel)
	// The first Do starts Chromium. A start that failed must not be tried
	// again on the same context: chromedp would allocate a second browser
	// for it, and panics (close of closed channel) when both have exited,
	// as CI saw once under load.
	if err := chromedp.Do(tab, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	p := &consolePage{ctx: tab}
	messages := chromedp.Console(tab)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Source == "security" || strings.Contains(m.Text, "Content Security Policy") {
				p.mu.Lock()
				p.errors = append(p.errors, m.String())
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { p.checkErrors(t) })
	return p
}

// checkErrors fails the test on what the page reported.
func (p *consolePage) checkErrors(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errors {
		t.Errorf("the page reported %s", e)
	}
	p.errors = nil
}

// do runs the browser steps; what fails says what the test was doing.
func (p *consolePage) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitTrue polls the JavaScript expression until it is true (the tab's
// deadline: 2 minutes from its start).
func (p *consolePage) waitTrue(t *testing.T, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("wait until %s (%s): %v\nthe page says:\n%.3000s", what, expr, err, body)
	}
}

// eval evaluates the JavaScript expression.
func evalJS[T any](t *testing.T, p *consolePage, expr string) T {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// rowText is the expression of desk name's row's text ("" without a row).
func rowText(name string) string {
	return fmt.Sprintf(`((document.querySelector('tr[data-desk=%q]') || {}).innerText || "")`, name)
}

// consoleDaemon starts an in-process daemon with two scripted desks, main
// and fx, and the extra lines in deskd.yaml, and returns it with its URL.
func consoleDaemon(t *testing.T, extra string) (*deskdProc, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", extra, "")
	writeTestFile(t, dir, filepath.Join("desks.d", "fx.yaml"), "model: m\ninstructions: You run the FX desk.\n")
	d := startInProcess(t, "deskd", cfg, apiStart)
	return d, d.waitReady(t)
}

// tokenConsoleDaemon starts a deskd whose operator token is
// consoleToken, for the sign-in tests, and returns it and its base URL.
func tokenConsoleDaemon(t *testing.T) (*deskdProc, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := apiConfig(t, dir, "{provider: scripted}", "auth_token_file: token\n", "")
	d := startInProcess(t, "deskd", cfg, apiStart)
	return d, d.waitReady(t)
}

// consoleToken is the operator token of tokenConsoleDaemon.
const consoleToken = "console-operator"

// TestConsoleBrowser: the console lists the desks with their state,
// follows a turn over the event stream, pauses a desk with its kill
// switch (an in-page dialog asking for a reason), fits 390 px without
// horizontal scrolling, and is photographed at 1280 px.
func TestConsoleBrowser(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	d, base := consoleDaemon(t, "")
	p := openConsole(t, 1280, 900)
	p.do(t, "open the console", chromedp.Navigate(base+"/"))

	// 1. The desks, with their state.
	for _, name := range []string{"main", "fx"} {
		p.waitTrue(t, "desk "+name+" is listed idle", rowText(name)+`.includes("IDLE")`)
	}
	if row := evalJS[string](t, p, rowText("main")); !strings.Contains(row, "SCRIPTED (offline test model)") {
		t.Errorf("desk main's row does not say its model is scripted:\n%s", row)
	}
	p.waitTrue(t, "the event stream is live", `document.getElementById("conn").textContent.includes("live")`)
	// The connection's badge says it is the event stream's, so that it
	// cannot be read as a model's name (the demo's model is "offline").
	if conn := evalJS[string](t, p, `document.getElementById("conn").textContent`); !strings.HasPrefix(conn, "events: ") || strings.Contains(conn, "offline") {
		t.Errorf("the connection badge reads %q, want it to start with \"events: \" and not to say offline", conn)
	}

	// 2. A turn, seen through the event stream.
	status, tr := d.post(t, `{"text": "Morning brief, please.", "kind": "manual", "id": "brief-1"}`)
	if status != http.StatusAccepted {
		t.Fatalf("POST trigger = %d %+v", status, tr)
	}
	p.waitTrue(t, "desk main shows its first turn", `(document.querySelector('tr[data-desk="main"] .turns') || {}).textContent === "1"`)
	p.waitTrue(t, "the events panel shows the turn", `[...document.querySelectorAll('#events .event')].some(e => e.dataset.topic === "turn.completed" && e.dataset.desk === "main")`)
	if got := evalJS[string](t, p, `(document.querySelector('tr[data-desk="fx"] .turns') || {}).textContent`); got != "0" {
		t.Errorf("desk fx shows %q turns, want 0", got)
	}

	// 3. The kill switch.
	const reason = "Risk limit breached on NIFTY futures"
	p.do(t, "pause desk main",
		chromedp.Click(chromedp.CSS(`tr[data-desk="main"] button[data-action="pause"]`)),
		chromedp.WaitVisible(chromedp.ID("dialog")),
		chromedp.SendKeys(chromedp.ID("dialog-f-0"), reason),
		chromedp.Click(chromedp.ID("dialog-confirm")),
	)
	p.waitTrue(t, "desk main shows it is paused", rowText("main")+`.includes("PAUSED") && `+rowText("main")+`.includes(`+jsString(reason)+`)`)
	p.waitTrue(t, "the dialog closed", `!document.getElementById("dialog").open`)
	code, body := d.call(t, http.MethodGet, "/v1/desks/main", "", "")
	var st struct {
		State  string `json:"state"`
		Paused *struct {
			By, Reason string
		} `json:"paused"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/desks/main = %d %s (%v)", code, body, err)
	}
	if st.State != "paused" || st.Paused == nil || st.Paused.Reason != reason || st.Paused.By != "console" {
		t.Errorf("after the kill switch desk main is %s paused %+v; want paused by console, reason %q", st.State, st.Paused, reason)
	}
	if row := evalJS[string](t, p, rowText("fx")); strings.Contains(row, "PAUSED") {
		t.Errorf("desk fx shows paused too:\n%s", row)
	}

	// At 1280 px the desks' table fits its box.
	if sw, cw := evalJS[int](t, p, `document.querySelector("#desks").parentElement.scrollWidth`), evalJS[int](t, p, `document.querySelector("#desks").parentElement.clientWidth`); sw > cw {
		t.Errorf("at 1280 px the desks' table is %d px wide in a box of %d px: it scrolls", sw, cw)
	}

	// 5. The screenshot at 1280 px.
	shot, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	writeShot(t, shot)

	// 4. A phone's width: the overview and the desk page.
	p.do(t, "narrow the tab to 390 px", chromedp.EmulateViewport(390, 844))
	for _, view := range []string{"#/", "#/desk/main"} {
		p.do(t, "open "+view, chromedp.Navigate(base+"/"+view))
		p.waitTrue(t, "the view "+view+" shows desk main", `document.body.innerText.includes("main") && document.getElementById("main").hidden === false`)
		if view == "#/desk/main" {
			p.waitTrue(t, "the desk page shows it paused", `document.getElementById("dv-status").innerText.includes("PAUSED")`)
		}
		if sw, iw := evalJS[int](t, p, `document.documentElement.scrollWidth`), evalJS[int](t, p, `window.innerWidth`); sw > iw {
			t.Errorf("at 390 px the page %s scrolls horizontally: scrollWidth %d > innerWidth %d", view, sw, iw)
		}
	}
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeShot writes the screenshot to the test's folder and, when
// DESKD_ARTIFACTS is set, to $DESKD_ARTIFACTS/console.png.
func writeShot(t *testing.T, png []byte) {
	t.Helper()
	dirs := []string{t.TempDir()}
	if a := os.Getenv("DESKD_ARTIFACTS"); a != "" {
		dirs = append(dirs, a)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("screenshot folder: %v", err)
		}
		p := filepath.Join(dir, "console.png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatalf("write the screenshot: %v", err)
		}
		t.Logf("screenshot: %s", p)
	}
}

// TestConsoleBrowserSignIn: with an operator token configured the console
// asks for it; a wrong one is refused, saying so; the right one shows the
// desks.
func TestConsoleBrowserSignIn(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	_, base := tokenConsoleDaemon(t)
	p := openConsole(t, 1280, 900)
	p.do(t, "open the console", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("signin-token")))
	if main := evalJS[bool](t, p, `document.getElementById("main").hidden`); !main {
		t.Errorf("the desks show before signing in")
	}
	p.do(t, "sign in with a wrong token",
		chromedp.SendKeys(chromedp.ID("signin-token"), "not-the-token"),
		chromedp.Click(chromedp.ID("signin-submit")),
	)
	p.waitTrue(t, "the form says the token is wrong, and empties its field", `!document.getElementById("signin-error").hidden && document.getElementById("signin-error").textContent.includes("Wrong token") && document.getElementById("signin-token").value === ""`)
	p.do(t, "sign in with the right token",
		chromedp.SendKeys(chromedp.ID("signin-token"), consoleToken),
		chromedp.Click(chromedp.ID("signin-submit")),
	)
	p.waitTrue(t, "desk main is listed", rowText("main")+`.includes("IDLE")`)
	if url := evalJS[string](t, p, `location.href`); strings.Contains(url, consoleToken) {
		t.Errorf("the token is in the URL %s", url)
	}
	if n := evalJS[int](t, p, `localStorage.length + sessionStorage.length`); n != 0 {
		t.Errorf("the page stored %d items in the browser's storage", n)
	}
	// Signing out forgets the cookie: the form is back, and the server
	// refuses the next call.
	p.do(t, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin-token")))
	who, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`fetch("/v1/whoami", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || who != http.StatusUnauthorized {
		t.Errorf("GET /v1/whoami from the page after signing out = %d (%v), want 401", who, err)
	}
}

// TestConsoleBrowserDeskPage: a desk's page shows the current session's
// transcript (the scripted reply labelled), its sessions with an export
// link, Memory.md and the day's notes; a trigger sent from the page is
// answered and its reply appears in the transcript without a reload.
func TestConsoleBrowserDeskPage(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	d, base := consoleDaemon(t, "")
	status, tr := d.post(t, `{"text": "Morning brief, please.", "kind": "manual", "id": "brief-1"}`)
	if status != http.StatusAccepted {
		t.Fatalf("POST trigger = %d %+v", status, tr)
	}
	if got := d.trigger(t, "brief-1"); got["state"] != "answered" {
		t.Fatalf("brief-1 = %v", got)
	}
	p := openConsole(t, 1280, 900)
	p.do(t, "open desk main's page", chromedp.Navigate(base+"/#/desk/main"))
	transcript := `document.getElementById("dv-transcript").innerText`
	p.waitTrue(t, "the transcript shows the trigger and the scripted reply",
		transcript+`.includes("Morning brief, please.") && document.querySelector("#dv-transcript .entry-assistant .badge-scripted") !== null`)
	if label := evalJS[string](t, p, `document.querySelector("#dv-transcript .entry-assistant .badge-scripted").textContent`); label != "SCRIPTED (offline test model)" {
		t.Errorf("the scripted reply is labelled %q", label)
	}
	p.waitTrue(t, "the sessions list links the session's export", `[...document.querySelectorAll("#dv-sessions a")].some(a => a.getAttribute("href").endsWith("/export"))`)
	href := evalJS[string](t, p, `[...document.querySelectorAll("#dv-sessions a")].find(a => a.getAttribute("href").endsWith("/export")).getAttribute("href")`)
	if code, body := d.call(t, http.MethodGet, href, "", ""); code != http.StatusOK || !strings.Contains(body, "Morning brief, please.") {
		t.Errorf("the export link %s = %d %.200s", href, code, body)
	}
	p.waitTrue(t, "Memory.md and the notes are shown", `document.getElementById("dv-memory").textContent !== "" && document.getElementById("dv-notes").textContent !== ""`)
	if audit := evalJS[string](t, p, `document.getElementById("dv-audit-link").getAttribute("href")`); !strings.HasPrefix(audit, "/v1/desks/main/audit?date=2026-03-02") {
		t.Errorf("the audit link is %q, want the desk's trading date", audit)
	}

	p.do(t, "send a trigger from the page",
		chromedp.SendKeys(chromedp.ID("dv-trigger-text"), "What is the NIFTY doing?"),
		chromedp.Click(chromedp.CSS(`#dv-trigger-form button[type="submit"]`)),
	)
	p.waitTrue(t, "the page says the trigger is queued", `document.getElementById("dv-trigger-result").textContent.startsWith("Queued as ")`)
	p.waitTrue(t, "the reply appears in the transcript", `document.querySelectorAll("#dv-transcript .entry-assistant").length === 2 && `+transcript+`.includes("What is the NIFTY doing?")`)
}

// TestConsoleBrowserRestore: a desk page's Restore asks in a dialog that
// names the desk and the version and opens with focus on Cancel (so a
// second Enter does not restore); confirmed, the restore is announced as
// done by the console.
func TestConsoleBrowserRestore(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	s := versionedDesk(t)
	d := startInProcess(t, "deskd", s.Config, apiStart)
	base := d.waitReady(t)
	events := followSSE(t, base, "?desk=main", "")
	p := openConsole(t, 1280, 900)
	p.do(t, "open desk main's page", chromedp.Navigate(base+"/#/desk/main"))
	const version = "20260301T100000.000000000Z"
	restore := `[...document.querySelectorAll("#dv-versions li")].filter(li => li.innerText.includes("20260301T100000")).map(li => [...li.querySelectorAll("button")].find(b => b.textContent === "Restore"))[0]`
	p.waitTrue(t, "the versions list version "+version, restore+` !== undefined`)
	if _, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](restore+`.click() === undefined`)); err != nil {
		t.Fatalf("click Restore: %v", err)
	}
	p.waitTrue(t, "the restore dialog is open", `document.getElementById("dialog").open`)
	if title, want := evalJS[string](t, p, `document.getElementById("dialog-title").textContent`), "Restore desk main's Memory.md to version "+version+"?"; title != want {
		t.Errorf("the restore dialog's title is %q, want %q", title, want)
	}
	if focused := evalJS[string](t, p, `document.activeElement ? document.activeElement.id : ""`); focused != "dialog-cancel" {
		t.Errorf("the restore dialog opens with focus on %q, want dialog-cancel", focused)
	}
	p.do(t, "confirm the restore", chromedp.Click(chromedp.ID("dialog-confirm")))
	e := events.next(t, "memory.restored", `"version":"`+version+`"`)
	if !strings.Contains(e.Data, `"by":"console"`) {
		t.Errorf("memory.restored = %s, want by console", e.Data)
	}
	p.waitTrue(t, "the dialog closed", `!document.getElementById("dialog").open`)
	if text, _ := s.Folder.ReadMemory(); text != "- lesson 1\n" {
		t.Errorf("Memory.md = %q after the restore, want lesson 1", text)
	}
}
