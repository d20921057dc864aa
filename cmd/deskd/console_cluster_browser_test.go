package main

// The web console of a cluster's hosts in real headless Chromium: two
// deskd binaries on a three-node JetStream cluster (clusterPair).

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleBrowserCluster: on the standby b the console lists desk main
// as STANDBY, names its owner a and links to main's page on a's console;
// main's page on b says which host owns it, with that link, and shows
// none of the owner's parts (no broken transcript or trigger form).
// Followed, the link opens main's page on a, which runs it: its owner
// line, its transcript. No page reports an error.
func TestConsoleBrowserCluster(t *testing.T) {
	t.Parallel()
	consoleChromium(t) // skips before the cluster starts when there is no browser
	a, b := clusterPair(t, time.Now().Add(90*time.Second))
	if code, _ := a.post(t, `{"text": "Morning brief, please.", "kind": "manual", "id": "brief-1"}`); code != 202 {
		t.Fatalf("POST brief-1 to the owner = %d", code)
	}
	if got := a.trigger(t, "brief-1"); got["state"] != "answered" {
		t.Fatalf("brief-1 = %v", got)
	}
	link := a.URL(t) + "/#/desk/main"
	owner := listedDesk(t, a).Owner

	p := openConsole(t, 1280, 900)
	p.do(t, "open the standby's console", chromedp.Navigate(b.URL(t)+"/"))
	p.waitTrue(t, "desk main is listed standby, run by host a", rowText("main")+`.includes("STANDBY") && `+rowText("main")+`.includes("runs on host a")`)
	if got := evalJS[string](t, p, `(document.querySelector('tr[data-desk="main"] a.owner-link') || {}).href || ""`); got != link {
		t.Errorf("the standby's row links to %q, want main's page on the owner %q", got, link)
	}
	if n := evalJS[int](t, p, `document.querySelectorAll('tr[data-desk="main"] button').length`); n != 0 {
		t.Errorf("the standby's row has %d buttons (pause, roll over), want none: the desk's controls are the owner's", n)
	}
	if !evalJS[bool](t, p, `document.querySelector('tr[data-desk="main"] .state-standby') !== null && [...document.querySelectorAll('#summary .pill')].some(e => e.textContent === "1 standby")`) {
		t.Errorf("the standby desk's badge or the summary's standby count is missing")
	}

	p.do(t, "open main's page on the standby", chromedp.Navigate(b.URL(t)+"/#/desk/main"))
	status := `document.getElementById("dv-status").innerText`
	p.waitTrue(t, "the page says host a owns desk main", status+`.includes("This host stands by for desk main: it runs on host a (epoch `+strconv.FormatUint(owner.Epoch, 10)+`")`)
	if got := evalJS[string](t, p, `(document.querySelector('#dv-status a.owner-link') || {}).href || ""`); got != link {
		t.Errorf("the standby's page links to %q, want %q", got, link)
	}
	for _, id := range []string{"dv-transcript", "dv-trigger-form", "dv-memory"} {
		if evalJS[bool](t, p, `document.getElementById("`+id+`").offsetParent !== null`) {
			t.Errorf("the standby's page of desk main shows #%s, a part only its owner has", id)
		}
	}
	if txt := evalJS[string](t, p, `document.body.innerText`); strings.Contains(txt, "could not load") || strings.Contains(txt, "HTTP 421") {
		t.Errorf("the standby's page shows a failed load:\n%.2000s", txt)
	}
	p.checkErrors(t)

	p.do(t, "follow the link to the owner", chromedp.Click(chromedp.CSS(`#dv-status a.owner-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#dv-transcript .entry-assistant`))) // on the owner's page: the standby's has none
	p.waitTrue(t, "the owner's page of desk main shows its owner and its transcript",
		`location.href === `+jsString(link)+` && `+status+`.includes("owner a · epoch `+strconv.FormatUint(owner.Epoch, 10)+`") && document.getElementById("dv-transcript").innerText.includes("Morning brief, please.")`)
	if evalJS[bool](t, p, `document.getElementById("deskview").classList.contains("is-standby")`) {
		t.Errorf("the owner's page of desk main is marked standby")
	}
	p.checkErrors(t)
}
