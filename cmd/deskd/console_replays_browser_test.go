package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deskd/deskd/desk/replay"
)

// replayMarkup is a trigger's text whose scripted reply quotes it: markup
// and a script that must show as text, never run.
const replayMarkup = `Quote <b>x</b> <img src=x onerror=window.replayPwned=2> <script>window.replayPwned=1</script>`

// TestConsoleBrowserReplays: a desk with a past replay (deskd replay
// without --out, beside the running daemon): the desk page's Replays card
// lists it; opening it shows both sides of each trigger, the original's
// and the candidate's, each with its model, and a reply holding markup
// (<b>x</b>, an <img> with onerror, <script>) shown as text: no element
// made of it, no script run. In headless Chromium.
func TestConsoleBrowserReplays(t *testing.T) {
	t.Parallel()
	consoleChromium(t)
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", "  other: {provider: scripted}\n", "")
	d := startInProcess(t, "deskd", cfg, apiStart)
	base := d.waitReady(t)
	for _, tr := range []string{`{"text": "Morning brief, please.", "kind": "manual", "id": "brief-1"}`,
		`{"text": "` + strings.ReplaceAll(replayMarkup, `"`, `\"`) + `", "kind": "manual", "id": "markup-1"}`} {
		if status, got := d.post(t, tr); status != http.StatusAccepted {
			t.Fatalf("POST %s = %d %+v", tr, status, got)
		}
	}
	for _, id := range []string{"brief-1", "markup-1"} {
		if got := d.trigger(t, id); got["state"] != "answered" || !strings.Contains(fmt.Sprint(got["reply"]), "Received") {
			t.Fatalf("%s = %v", id, got)
		}
	}
	if code, out := deskdCLI(t, "replay", "main", "--config", cfg, "--date", "2026-03-02", "--model", "other"); code != 0 ||
		!strings.Contains(out, "replayed 2 of 2 triggers of main 2026-03-02") || !strings.Contains(out, "replays/main/2026-03-02-1/report.html") {
		t.Fatalf("deskd replay = %d\n%s", code, out)
	}
	if code, body := d.call(t, http.MethodGet, "/v1/desks/main/replays", "", ""); code != 200 || !strings.Contains(body, `"id": "2026-03-02-1"`) {
		t.Fatalf("GET replays = %d %s", code, body)
	}

	p := openConsole(t, 1280, 900)
	p.do(t, "open desk main's page", chromedp.Navigate(base+"/#/desk/main"))
	item := `document.querySelector("#dv-replays details.replay-item")`
	p.waitTrue(t, "the Replays card lists the replay", item+` !== null && `+item+`.querySelector("summary").textContent.includes("2026-03-02")`)
	if txt := evalJS[string](t, p, item+`.querySelector("summary").textContent`); !strings.Contains(txt, "--model other") || !strings.Contains(txt, "2/2 triggers") {
		t.Errorf("the replay's line reads %q; want its candidate and 2/2 triggers", txt)
	}
	p.do(t, "open the replay", chromedp.Click(chromedp.CSS(`#dv-replays details.replay-item summary`)))
	p.waitTrue(t, "the replay's triggers show", `document.querySelectorAll("#dv-replays .replay-trigger").length === 2`)

	sides := `[...document.querySelectorAll("#dv-replays .replay-trigger")].map(t => [...t.querySelectorAll(".replay-side > strong")].map(s => s.textContent).join(" | ")).join("\n")`
	if got := evalJS[string](t, p, sides); got != "Original · m | Candidate · other\nOriginal · m | Candidate · other" {
		t.Errorf("the triggers' sides read %q; want the original (m) beside the candidate (other) for each", got)
	}
	replies := evalJS[[]string](t, p, `[...document.querySelectorAll("#dv-replays .replay-trigger")[1].querySelectorAll(".replay-reply")].map(r => r.textContent)`)
	if len(replies) != 2 {
		t.Fatalf("markup-1 shows %d replies, want 2 (both sides)", len(replies))
	}
	for i, r := range replies {
		if !strings.Contains(r, "<b>x</b>") || !strings.Contains(r, "<img src=x onerror=window.replayPwned=2>") || !strings.Contains(r, "<script>window.replayPwned=1</script>") {
			t.Errorf("markup-1's reply %d shows %q; want its markup as text", i, r)
		}
	}
	if n := evalJS[int](t, p, `document.querySelectorAll("#dv-replays b, #dv-replays img, #dv-replays script, #dv-replays .replay-reply *").length`); n != 0 {
		t.Errorf("the Replays card made %d elements of the replies' markup", n)
	}
	if ran := evalJS[bool](t, p, `window.replayPwned !== undefined`); ran {
		t.Errorf("the reply's script ran")
	}
	if _, err := replay.ReadReport(filepath.Join(dir, "state", "replays", "main", "2026-03-02-1")); err != nil {
		t.Errorf("the report is not where the console read it: %v", err)
	}
}
