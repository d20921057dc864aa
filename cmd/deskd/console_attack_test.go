package main

// The web console attacked in real headless Chromium: markup an attacker
// can get into what the page shows (a trigger's text, a pause's reason
// and "by", Memory.md, the notes, a summary, a skill's description, a
// curator's reason, events, a config file's refusal) stays text; the
// page is not framed; the cookie is out of the page's reach and gone at
// sign-out.

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/deskd/deskd/desk/httpapi"
)

// xssPayload is markup that, were it ever parsed as HTML or followed as a
// link, would set window.__xss to where it came from.
func xssPayload(where string) string {
	set := fmt.Sprintf("window.__xss=%q", where)
	return fmt.Sprintf(`<img src=x onerror="%s"> <script>%s</script> "><svg onload="%s"> <a href="javascript:%s">x</a> javascript:%s`, set, set, set, set, set)
}

// noInjectedDOM is a JavaScript expression of what went wrong in the page
// ("" when nothing did): the payload's flag set, an element made from
// the payload, or an event-handler attribute anywhere.
const noInjectedDOM = `(() => {
  if (window.__xss !== undefined) return "the payload of " + window.__xss + " ran";
  if (document.querySelector('img[src="x"], svg, a[href^="javascript:"], body script:not([src])')) return "an element was made from a payload: " + document.querySelector('img[src="x"], svg, a[href^="javascript:"], body script:not([src])').outerHTML;
  for (const e of document.querySelectorAll("*")) for (const a of e.attributes) if (a.name.startsWith("on")) return "<" + e.tagName + "> has " + a.name;
  return "";
})()`

// TestConsoleAttackXSS: every text an attacker or a model can write that
// the console shows is shown as text: no payload runs, no element is made
// from one, and the page reports no refusal of its CSP (which an inline
// handler that got into the DOM would cause).
func TestConsoleAttackXSS(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", "", "")
	writeTestFile(t, dir, filepath.Join("desks.d", "fx.yaml"), "model: m\ninstructions: You run the FX desk.\n")
	d := startInProcess(t, "deskd", cfg, apiStart)
	base := d.waitReady(t)
	deadline := time.Now().Add(90 * time.Second)

	deskDir := filepath.Join(dir, "state", "desks", "main")
	files := map[string]string{
		"Memory.md":                "# Lessons\n" + xssPayload("Memory.md") + "\n",
		"notes/2026-03-02.md":      xssPayload("notes") + "\n",
		"summaries/2026-03-02.md":  xssPayload("summary") + "\n",
		"skills/evil/SKILL.md":     "---\nname: evil\ndescription: '" + strings.ReplaceAll(xssPayload("skill description"), "'", "''") + "'\n---\nBody.\n",
		"curator/ledger.jsonl":     `{"id":"c-evil","at":"2026-03-02T04:00:00Z","trading_date":"2026-03-02","action":"retire","skill":"evil","reason":` + jsString(xssPayload("curator reason")) + `,"before":"","after":"","archived_to":""}` + "\n",
		"../../../desks.d/fx.yaml": "model: " + jsString(xssPayload("config rejection")) + "\ninstructions: x\n",
	}
	writeTestFiles(t, deskDir, files)
	d.debounced(t, func() {
		d.waitEach(t, deadline, isRejection, map[string]func(stderrLine) bool{"the hostile fx.yaml refused": isEvent("config.rejected", "desk", "fx")})
	})
	if status, tr := d.post(t, `{"text": `+jsString(xssPayload("trigger text"))+`, "kind": "manual", "id": "xss-1"}`); status != http.StatusAccepted {
		t.Fatalf("POST trigger = %d %+v", status, tr)
	}
	if got := d.trigger(t, "xss-1"); got["state"] != "answered" {
		t.Fatalf("xss-1 = %v", got)
	}
	if code, body := d.call(t, http.MethodPost, "/v1/desks/fx/pause", "", `{"by": `+jsString(xssPayload("pause by"))+`, "reason": `+jsString(xssPayload("pause reason"))+`}`); code != http.StatusOK {
		t.Fatalf("pause fx = %d %s", code, body)
	}

	p := openConsole(t, 1280, 900)
	p.do(t, "open the overview", chromedp.Navigate(base+"/"))
	p.waitTrue(t, "desk fx shows its hostile pause reason as text", rowText("fx")+`.includes("<img src=x onerror=")`)
	p.waitTrue(t, "the events panel shows the pause", `[...document.querySelectorAll('#events .event')].some(e => e.dataset.topic === "desk.paused")`)
	p.waitTrue(t, "the config refusal is shown", `document.body.innerText.includes("config rejection")`)
	if what := evalJS[string](t, p, noInjectedDOM); what != "" {
		t.Errorf("the overview: %s", what)
	}
	p.do(t, "open desk main's page", chromedp.Navigate(base+"/#/desk/main"))
	for _, where := range []string{"trigger text", "Memory.md", "notes", "summary", "skill description", "curator reason"} {
		p.waitTrue(t, "desk main's page shows the "+where+" payload as text", `document.body.textContent.includes(`+jsString(`window.__xss="`+where+`"`)+`)`)
	}
	if what := evalJS[string](t, p, noInjectedDOM); what != "" {
		t.Errorf("desk main's page: %s", what)
	}
	// The audit link saves the bundle under the name of what it is.
	if name := evalJS[string](t, p, `document.getElementById("dv-audit-link").getAttribute("download")`); !strings.HasSuffix(name, ".tar.gz") {
		t.Errorf("the audit link saves the gzipped tar bundle as %q", name)
	}
	p.do(t, "open desk fx's page", chromedp.Navigate(base+"/#/desk/fx"))
	p.waitTrue(t, "desk fx's page shows who paused it, as text", `document.getElementById("dv-status").innerText.includes(`+jsString(`window.__xss="pause by"`)+`)`)
	if what := evalJS[string](t, p, noInjectedDOM); what != "" {
		t.Errorf("desk fx's page: %s", what)
	}
}

// TestConsoleAttackFraming: the page, its assets and the API's answers
// may not be framed: their headers say so, and a frame of the page or of
// the API in Chromium holds neither.
func TestConsoleAttackFraming(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	_, base := consoleDaemon(t, "")
	for _, path := range []string{"/", "/console/console.js", "/v1/desks", "/v1/nothing"} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", base+path, nil)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: X-Frame-Options %q, Content-Security-Policy %q, X-Content-Type-Options %q", path,
				resp.Header.Get("X-Frame-Options"), resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Content-Type-Options"))
		}
	}
	// Framing is refused to every origin, the console's own too: frame
	// each from the console's page, and read what the frame holds.
	p := openConsole(t, 800, 600)
	p.do(t, "open the console", chromedp.Navigate(base+"/"))
	for _, path := range []string{"/", "/v1/desks"} {
		held, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`new Promise((done) => {
  const f = document.createElement("iframe");
  f.onload = () => {
    try { done(f.contentDocument ? f.contentDocument.documentElement.outerHTML : "(no document)"); }
    catch (e) { done("(refused: " + e.message + ")"); }
  };
  f.src = `+jsString(path)+`;
  document.body.append(f);
})`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("frame %s: %v", path, err)
		}
		if strings.Contains(held, "signin") || strings.Contains(held, `"desks"`) {
			t.Errorf("a frame of %s holds it:\n%.300s", path, held)
		}
	}
	p.mu.Lock()
	p.errors = nil // the refusal is what this test wants
	p.mu.Unlock()
}

// TestConsoleAttackCookie: signed in from the page, Chromium holds the
// cookie HttpOnly (the page's script cannot read it) and SameSite=Strict;
// a session id the attacker planted in the jar is replaced at sign-in;
// signing out from the page removes the cookie from the jar, and the old
// id is refused.
func TestConsoleAttackCookie(t *testing.T) {
	consoleChromium(t)
	t.Parallel()
	_, base := tokenConsoleDaemon(t)
	p := openConsole(t, 1280, 900)
	planted := strings.Repeat("ab", 32)
	p.do(t, "open the console", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("signin-token")))
	if _, err := chromedp.Call(p.ctx, network.SetCookie, network.SetCookieParams{Name: httpapi.CookieName, Value: planted, URL: base + "/"}); err != nil {
		t.Fatalf("plant a cookie: %v", err)
	}
	p.do(t, "sign in", chromedp.SendKeys(chromedp.ID("signin-token"), consoleToken), chromedp.Click(chromedp.ID("signin-submit")))
	p.waitTrue(t, "desk main is listed", rowText("main")+`.includes("IDLE")`)
	jar := func() []*network.Cookie {
		res, err := chromedp.Call(p.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
		if err != nil {
			t.Fatalf("read the cookie jar: %v", err)
		}
		return res.Cookies
	}
	var id string
	for _, c := range jar() {
		if c.Name == httpapi.CookieName {
			id = c.Value
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Value == planted {
				t.Errorf("the console's cookie in the jar: HttpOnly %v, SameSite %q, planted id kept %v", c.HTTPOnly, c.SameSite, c.Value == planted)
			}
		}
	}
	if id == "" {
		t.Fatalf("no %s cookie in the jar after signing in", httpapi.CookieName)
	}
	if got := evalJS[string](t, p, `document.cookie`); strings.Contains(got, httpapi.CookieName) {
		t.Errorf("the page's script reads the cookie: %q", got)
	}
	p.do(t, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin-token")))
	for _, c := range jar() {
		if c.Name == httpapi.CookieName {
			t.Errorf("after signing out the jar still holds %s=%s", c.Name, c.Value)
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/v1/whoami", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.CookieName, Value: id})
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out id = %d, want 401", resp.StatusCode)
	}
}
