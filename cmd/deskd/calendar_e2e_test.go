package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deskd/deskd/router/routertest"
)

// productionCopy writes examples/production into a folder of the test,
// listening on a free port, its model the fake service llm, with extra
// files (calendars.d/...) beside it; it returns the main file's path.
func productionCopy(t *testing.T, llm *routertest.Server, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("../../examples/production", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	main := read("deskd.yaml")
	for old, repl := range map[string]string{
		"listen: 127.0.0.1:7317":      "listen: 127.0.0.1:0",
		"api_key_env: OPENAI_API_KEY": "api_key_env: OPENAI_API_KEY\n    base_url: " + llm.BaseURL(),
	} {
		if !strings.Contains(main, old) {
			t.Fatalf("examples/production/deskd.yaml has no %q", old)
		}
		main = strings.Replace(main, old, repl, 1)
	}
	writeTestFile(t, dir, "desks.d/nse.yaml", read("desks.d/nse.yaml"))
	writeTestFiles(t, dir, extra)
	return writeTestFile(t, dir, "deskd.yaml", main)
}

// productionInProcess runs the daemon of productionCopy's cfg in process
// (its model's key OPENAI_API_KEY=test-key), its state in a state folder
// beside cfg (as deskd run --state-dir), on a fake clock reading start.
func productionInProcess(t *testing.T, name, cfg string, start time.Time) *deskdProc {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "test-key")
	c, err := loadConfig(cfg)
	if err != nil {
		t.Fatalf("%s: load %s: %v", name, cfg, err)
	}
	c.StateDir, c.StateDirOverridden = filepath.Join(filepath.Dir(cfg), "state"), true
	return runInProcess(t, name, c, start)
}

// republicDay2027 is 09:59:50 IST on 26 January 2027, ten seconds before
// the production desk's 10:00 market_hours slot.
var republicDay2027 = time.Date(2027, 1, 26, 4, 29, 50, 0, time.UTC)

// nseStatus is GET /v1/desks's entry of desk nse, as JSON fields.
func nseStatus(t *testing.T, d *deskdProc) map[string]any {
	t.Helper()
	code, body := d.call(t, "GET", "/v1/desks", "", "")
	if code != 200 {
		d.fail(t, "GET /v1/desks = %d %s", code, body)
	}
	var out struct {
		Desks []map[string]any `json:"desks"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		d.fail(t, "GET /v1/desks: %v: %s", err, body)
	}
	for _, st := range out.Desks {
		if st["name"] == "nse" {
			return st
		}
	}
	d.fail(t, "GET /v1/desks has no desk nse: %s", body)
	return nil
}

// TestRepublicDay2027E2E: the production example on 26 January 2027, a
// date its shipped NSE calendar (through 2026-12-31) does not cover. deskd
// used to take it for a weekday like any other: "NSE open", and the 10:00
// market_hours slot went to the model. Now the market is unknown, never
// open; the slot is held: recorded missed in the ledger with the reason
// "calendar NSE ends 2026-12-31", announced once as a held schedule.missed
// at error level, and no model is called; the calendar's end is announced
// at start (calendar.ending), in deskd status and in the metrics. The
// In process, its clock starting at 09:59:50 IST and moved to 10:00.
func TestRepublicDay2027E2E(t *testing.T) {
	llm, _ := newFakeLLM(t, "")
	cfg := productionCopy(t, llm, nil)
	d := productionInProcess(t, "deskd", cfg, republicDay2027)
	addr := d.waitReady(t)
	deadline := time.Now().Add(60 * time.Second)

	ending := d.waitFor(t, deadline, "calendar.ending at start", isEvent("calendar.ending", "calendar", "NSE", "through", "2026-12-31"))
	if ending.Num("days_left") != -26 || ending.Str("level") != "warn" || !strings.Contains(ending.Str("message"), "calendars.d/NSE.yaml (extends: NSE") {
		t.Errorf("calendar.ending line = %s, want days_left -26 at warn, saying to extend NSE in calendars.d", ending.Raw)
	}
	st := nseStatus(t, d)
	if st["market"] != "unknown" || st["market_open"] != nil || st["calendar_through"] != "2026-12-31" || st["calendar_days_left"] != float64(-26) {
		t.Errorf("status: market %v, market_open %v, calendar_through %v, calendar_days_left %v; want unknown, none, 2026-12-31, -26",
			st["market"], st["market_open"], st["calendar_through"], st["calendar_days_left"])
	}

	d.at(t, "2027-01-26T10:00:00+05:30")
	held := d.waitFor(t, deadline, "the 10:00 slot held", isEvent("schedule.missed", "schedule", "intraday"))
	if held.Str("level") != "error" || held.Fields["held"] != true || held.Str("reason") != "calendar NSE ends 2026-12-31" ||
		!parseTimeField(t, held, "slot").Equal(time.Date(2027, 1, 26, 4, 30, 0, 0, time.UTC)) {
		t.Errorf("schedule.missed line = %s, want the 10:00 IST slot held at error: calendar NSE ends 2026-12-31", held.Raw)
	}
	id := "intraday@2027-01-26T04:30:00Z"
	code, body := d.call(t, "GET", "/v1/desks/nse/triggers/"+url.PathEscape(id), "", "")
	if code != 200 || !strings.Contains(body, `"missed"`) || !strings.Contains(body, "calendar NSE ends 2026-12-31") {
		t.Errorf("GET trigger %s = %d %s, want it missed with the calendar's reason", id, code, body)
	}
	if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 || !strings.Contains(out, "NSE unknown") ||
		!strings.Contains(out, "calendar NSE ended 2026-12-31 (26 days ago): its trading_days and market_hours slots are held") {
		t.Errorf("deskd status = %d:\n%s\nwant MARKET NSE unknown and the note of the held slots", code, out)
	}
	if code, body := d.call(t, "GET", "/metrics", "", ""); code != 200 || !strings.Contains(body, `deskd_calendar_days_left{calendar="NSE"} -26`) {
		t.Errorf("GET /metrics = %d, want deskd_calendar_days_left{calendar=\"NSE\"} -26", code)
	}
	d.terminate(t)
	if n := llm.Count(); n != 0 {
		t.Errorf("the model was called %d times past the calendar's end", n)
	}
	if n := d.count(isEvent("turn.started")); n != 0 {
		t.Errorf("%d turns started past the calendar's end", n)
	}
	if n := d.count(isEvent("schedule.missed")); n != 1 {
		t.Errorf("%d schedule.missed lines, want the one held slot's", n)
	}
}

// TestCalendarExtendsE2E: calendars.d/NSE.yaml with extends: NSE moves
// the shipped calendar's end: on 26 January 2027 the production desk
// follows it again (here with a test's own holiday on that date, not
// NSE's list: the market is closed, nothing is held or fired), and
// beyond_calendar: weekdays instead fires the 10:00 slot on the
// calendar's weekdays and sessions, the market shown as assumed open.
// In process, its clock starting at 09:59:50 IST and moved to 10:00.
func TestCalendarExtendsE2E(t *testing.T) {
	llm, _ := newFakeLLM(t, "")
	cfg := productionCopy(t, llm, map[string]string{
		"calendars.d/NSE.yaml": "extends: NSE\nthrough: 2027-12-31\nholidays:\n  - {date: \"2027-01-26\", name: a test's holiday}\n",
	})
	d := productionInProcess(t, "extended", cfg, republicDay2027)
	d.waitReady(t)
	if st := nseStatus(t, d); st["market"] != "closed" || st["market_open"] != false || st["calendar_through"] != "2027-12-31" || st["calendar_ending"] != nil {
		t.Errorf("extended status: market %v, market_open %v, through %v, ending %v; want closed, false, 2027-12-31, not ending",
			st["market"], st["market_open"], st["calendar_through"], st["calendar_ending"])
	}
	d.terminate(t)
	if n := d.count(isEvent("calendar.ending")); n != 0 {
		t.Errorf("%d calendar.ending lines for a calendar extended to 2027-12-31", n)
	}

	// beyond_calendar: weekdays on the shipped calendar: the slot fires.
	cfg = productionCopy(t, llm, nil)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "beyond_calendar: hold") {
		t.Fatalf("examples/production/deskd.yaml does not say beyond_calendar: hold")
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "beyond_calendar: hold", "beyond_calendar: weekdays", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d = productionInProcess(t, "weekdays", cfg, republicDay2027)
	d.waitReady(t)
	if st := nseStatus(t, d); st["market"] != "assumed_open" || st["market_open"] != nil {
		t.Errorf("weekdays status at 09:59, in the assumed session: market %v, market_open %v; want assumed_open, none",
			st["market"], st["market_open"])
	}
	d.at(t, "2027-01-26T10:00:00+05:30")
	d.waitFor(t, time.Now().Add(60*time.Second), "the 10:00 slot's turn", isEvent("turn.completed"))
	d.terminate(t)
	if n := d.count(isEvent("calendar.ending")); n != 1 {
		t.Errorf("%d calendar.ending lines under weekdays, want the same warning", n)
	}
}

// TestCheckConfigCalendarEnding: check-config of the production example
// warns (exit 0) from calendar_warn_days (30) before NSE's end, naming the
// calendar, its desks and what to do; not before.
func TestCheckConfigCalendarEnding(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-dummy")
	const cfg = "../../examples/production/deskd.yaml"
	code, out := deskdCLI(t, "check-config", "--config", cfg, "--clock-start", "2026-12-02T10:00:00+05:30")
	if code != 0 || !strings.Contains(out, "ok, 1 desk [nse]") ||
		!strings.Contains(out, "warning: ") || !strings.Contains(out, "calendar NSE (desks nse) ends 2026-12-31, in 29 days; add the exchange's published dates in NSE.yaml of calendars_dir with extends: NSE") {
		t.Errorf("check-config 29 days before the end = %d\n%s", code, out)
	}
	code, out = deskdCLI(t, "check-config", "--config", cfg, "--clock-start", "2026-11-30T10:00:00+05:30")
	if code != 0 || strings.Contains(out, "warning") {
		t.Errorf("check-config 31 days before the end = %d\n%s", code, out)
	}
}

// TestConsoleBrowserCalendarBanner: past its calendar's end, the console
// shows a banner naming the calendar, its end and what to do, and the
// desk's market as UNKNOWN, never OPEN (headless Chromium).
func TestConsoleBrowserCalendarBanner(t *testing.T) {
	consoleChromium(t)
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", "", "calendar: NSE\n")
	d := startInProcess(t, "deskd", cfg, time.Date(2027, 1, 26, 4, 30, 0, 0, time.UTC)) // 10:00 IST, Republic Day 2027
	base := d.waitReady(t)
	p := openConsole(t, 1280, 900)
	p.do(t, "open the console", chromedp.Navigate(base+"/"))
	p.waitTrue(t, "the calendar banner", `!document.getElementById("banner").hidden && document.getElementById("banner").innerText.includes(`+
		jsString("CALENDAR: Calendar NSE ended 2026-12-31 (26 days ago): trading_days and market_hours slots are held. Add the exchange's published dates in calendars.d/NSE.yaml (extends: NSE, a later through).")+`)`)
	p.waitTrue(t, "desk main's market is unknown", rowText("main")+`.includes("UNKNOWN · NSE")`)
	if row := evalJS[string](t, p, rowText("main")); strings.Contains(row, "OPEN") {
		t.Errorf("desk main's row says OPEN past its calendar's end:\n%s", row)
	}
	p.checkErrors(t)
}
