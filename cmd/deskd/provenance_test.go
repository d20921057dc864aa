package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// The provenance tests make a desk's state folder the way the daemon does,
// with a real router and keeper (the offline scripted model, the built-in
// tools, a fake clock), then read it with the operator commands in
// process: what `deskd sessions`, `show`, `export` and `audit` say of
// forks, summaries and folds must be what happened.

// liveDesk is a router and a keeper over the desk folder of an opsSetup.
type liveDesk struct {
	t      *testing.T
	s      *opsSetup
	clock  *clock.Fake
	bus    *event.Bus
	folder *memory.Folder
	router *router.Router
	keeper *keeper.Keeper
}

// newLiveDesk starts the desk of s at start (its first session).
func newLiveDesk(t *testing.T, s *opsSetup, start string) *liveDesk {
	t.Helper()
	ist, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	day := memory.TradingDay{Location: ist}
	d := &liveDesk{t: t, s: s, clock: clock.NewFake(utcTime(t, start)), bus: event.New()}
	t.Cleanup(d.bus.Close)
	d.folder, err = memory.OpenFolder(s.DeskDir, "main", d.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	d.router, err = router.New(router.Options{Desk: "main", Folder: d.folder, Clock: d.clock, Day: day, Bus: d.bus,
		Settings: router.Settings{
			Route:        []router.Model{{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}}},
			Instructions: "You run the main desk.",
			Tools:        router.BuiltinTools(d.folder, func() memory.Date { return day.DateOf(d.clock.Now()) }),
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.router.Close() })
	d.keeper = keeper.New(keeper.Options{Desk: "main", Router: d.router, Folder: d.folder, Bus: d.bus, Clock: d.clock, Day: day})
	if err := d.keeper.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return d
}

// turn runs one trigger as the desk's loop does: the keeper prepares it
// (rolling over on a new trading date), then the router answers it.
func (d *liveDesk) turn(id, text string) {
	d.t.Helper()
	d.clock.Advance(time.Minute)
	tr, err := d.keeper.Prepare(d.t.Context(), triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Manual, Text: text, At: d.clock.Now()})
	if err != nil {
		d.t.Fatalf("Prepare(%s): %v", id, err)
	}
	if _, err := d.router.Send(d.t.Context(), tr); err != nil {
		d.t.Fatalf("Send(%s): %v", id, err)
	}
}

// at moves the clock to when.
func (d *liveDesk) at(when string) {
	d.t.Helper()
	if dt := utcTime(d.t, when).Sub(d.clock.Now()); dt > 0 {
		d.clock.Advance(dt)
	}
}

// TestSessionsListAFork: after deskd fork, `deskd sessions` says the new
// session was forked from the old one, and the old one is listed as forked
// into it, not as rolled over; `deskd show` marks the records the fork
// carries as copied, with the provenance they were written with.
func TestSessionsListAFork(t *testing.T) {
	s := newOpsSetup(t)
	d := newLiveDesk(t, s, "2026-03-02T04:00:00Z") // 09:30 IST
	d.turn("t1", "Remember the gap at 22000.")
	parent := d.router.SessionID()
	d.clock.Advance(time.Hour)
	child, err := d.router.Fork(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d.turn("t2", "And now?")

	code, out, errOut := runOps(t, s, "sessions", "main", "--json")
	if code != 0 {
		t.Fatalf("deskd sessions --json: exit %d, %s", code, errOut)
	}
	var rows []sessionRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d sessions listed, want 2:\n%s", len(rows), out)
	}
	if p := rows[0]; p.ID != parent || p.State != "forked" || len(p.Forks) != 1 || p.Forks[0] != child || p.Turns != 1 {
		t.Errorf("the old session = %+v, want %s forked into %s, 1 turn", p, parent, child)
	}
	if c := rows[1]; c.ID != child || c.State != "active" || c.ForkedFrom != parent || c.Parent != parent || c.Turns != 1 {
		t.Errorf("the fork = %+v, want %s active, forked from %s, 1 turn of its own", c, child, parent)
	}

	_, out, _ = runOps(t, s, "sessions", "main")
	for _, want := range []string{"forked into " + child, "active, forked from " + parent} {
		if !strings.Contains(out, want) {
			t.Errorf("deskd sessions lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rolled over") {
		t.Errorf("deskd sessions lists a fork as rolled over:\n%s", out)
	}

	_, out, _ = runOps(t, s, "show", "main", child)
	for _, want := range []string{
		"state: active, forked from " + parent,
		"--- 2026-03-02 09:31:00 IST  user · manual · trigger t1 · copied from " + parent + "\nRemember the gap at 22000.",
		"assistant · offline (scripted) SCRIPTED · ",
		"user · manual · trigger t2\nAnd now?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deskd show %s lacks %q:\n%s", child, want, out)
		}
	}
}

// TestExportShowsTheSummaryOfTheSession: two sessions of one trading date
// (a manual rollover, then the daily one) each had a summary written; the
// date's summary file holds the later one. The export of the first shows
// the first's summary, from the version kept in history/, not the later
// session's.
func TestExportShowsTheSummaryOfTheSession(t *testing.T) {
	s := newOpsSetup(t)
	d := newLiveDesk(t, s, "2026-03-02T04:00:00Z")
	d.turn("t1", "Morning: watch NIFTY.")
	morning := d.router.SessionID()
	if _, err := d.keeper.RollOver(t.Context(), "manual_rollover"); err != nil {
		t.Fatal(err)
	}
	afternoon := d.router.SessionID()
	d.turn("t2", "Afternoon: close the book.")
	d.at("2026-03-02T18:31:00Z") // 00:01 IST, 3 March
	d.turn("t3", "Good morning.")

	first, ok, err := d.folder.SessionSummary(morning)
	if err != nil || !ok || !strings.Contains(first.Text, "Morning: watch NIFTY.") {
		t.Fatalf("the morning session's summary = %+v, %v, %v", first, ok, err)
	}
	latest, _, err := d.folder.ReadSummary(memory.Date{Year: 2026, Month: 3, Day: 2})
	if err != nil || !strings.Contains(latest.Text, "Afternoon: close the book.") {
		t.Fatalf("the date's summary file = %q, %v; want the afternoon's", latest.Text, err)
	}

	for _, tt := range []struct{ id, want, not string }{
		{morning, "Morning: watch NIFTY.", "Afternoon: close the book. -&gt;"},
		{afternoon, "Afternoon: close the book. -&gt;", "Morning: watch NIFTY. -&gt;"},
	} {
		code, page, errOut := runOps(t, s, "export", "main", tt.id, "-o", "-")
		if code != 0 {
			t.Fatalf("deskd export %s: exit %d, %s", tt.id, code, errOut)
		}
		i := strings.Index(page, `<h2 id="summary">`)
		if i < 0 {
			t.Fatalf("the page of %s has no summary section", tt.id)
		}
		sum := page[i:]
		if !strings.Contains(sum, tt.want) || strings.Contains(sum, tt.not) {
			t.Errorf("the summary section of %s:\n%s\nwant %q and not %q", tt.id, sum, tt.want, tt.not)
		}
	}
	_, page, _ := runOps(t, s, "export", "main", morning, "-o", "-")
	if !strings.Contains(page, "From history/summaries/2026-03-02/") || !strings.Contains(page, "replaced the date&#39;s summary file since") {
		t.Errorf("the morning's summary does not say it is the version kept in history:\n%s", page[strings.Index(page, `<h2 id="summary">`):])
	}
	_, page, _ = runOps(t, s, "export", "main", "-o", "-") // the active session: no summary yet
	if i := strings.Index(page, `<h2 id="summary">`); i < 0 || !strings.Contains(page[i:], "No summary of 2026-03-03 yet") {
		t.Errorf("the active session's page should have no summary")
	}
}

// TestAuditFoldThatCreatedMemory: a new desk's first fold creates
// Memory.md (there was none, so nothing is kept in history/). The audit of
// that day shows an empty before, the fold's Memory.md after, and the diff
// between them, not today's Memory.md twice with an empty diff. The next
// day's fold is shown as what it read and what it wrote.
func TestAuditFoldThatCreatedMemory(t *testing.T) {
	s := newOpsSetup(t)
	d := newLiveDesk(t, s, "2026-03-02T04:00:00Z")
	d.turn("t1", "Check the tape.\nNOTE: NIFTY gapped up; hedge early.")
	d.at("2026-03-02T18:31:00Z") // 00:01 IST, 3 March: the rollover folds the notes of 2 March
	d.turn("t2", "Good morning.\nNOTE: quiet open.")
	first, err := d.folder.ReadMemory()
	if err != nil || !strings.Contains(first, "NIFTY gapped up; hedge early.") {
		t.Fatalf("Memory.md after the first fold = %q, %v", first, err)
	}
	d.at("2026-03-03T18:31:00Z") // the rollover folds the notes of 3 March
	d.turn("t3", "Hello.")
	second, err := d.folder.ReadMemory()
	if err != nil || !strings.Contains(second, "quiet open.") {
		t.Fatalf("Memory.md after the second fold = %q, %v", second, err)
	}

	files, _, _ := auditBundleOf(t, s, "2026-03-02")
	if got := files["memory/Memory.before.md"]; got != "" {
		t.Errorf("Memory.before.md of 2026-03-02 = %q, want empty: there was no Memory.md before the day's fold", got)
	}
	if got := files["memory/Memory.after.md"]; got != first {
		t.Errorf("Memory.after.md of 2026-03-02 =\n%s\nwant what the fold wrote:\n%s", got, first)
	}
	if diff := files["memory/Memory.diff"]; !strings.Contains(diff, "@@ -0,0 +1,3 @@\n") || !strings.Contains(diff, "\n+NIFTY gapped up; hedge early.\n") {
		t.Errorf("Memory.diff of 2026-03-02 =\n%s\nwant the fold's lines added", diff)
	}
	if m := files["MANIFEST.txt"]; !strings.Contains(m, "memory before: Memory.md as the day's fold of notes read it") ||
		!strings.Contains(m, "no Memory.md: there was none, and the fold created it") {
		t.Errorf("MANIFEST.txt does not say where the day's before came from:\n%s", m)
	}

	files, _, _ = auditBundleOf(t, s, "2026-03-03")
	if got := files["memory/Memory.before.md"]; got != first {
		t.Errorf("Memory.before.md of 2026-03-03 =\n%s\nwant what the day's fold read:\n%s", got, first)
	}
	if got := files["memory/Memory.after.md"]; got != second {
		t.Errorf("Memory.after.md of 2026-03-03 =\n%s\nwant what the day's fold wrote:\n%s", got, second)
	}
	if m := files["MANIFEST.txt"]; !strings.Contains(m, "from rollover.json (fold_before: what the fold read)") {
		t.Errorf("the last rollover's before should come from its journal:\n%s", m)
	}
}

// TestAuditSaysWhichRepliesWereScripted: the manifest lists every model
// answer of the day's sessions, and marks those of the offline scripted
// model, and only those.
func TestAuditSaysWhichRepliesWereScripted(t *testing.T) {
	s := newOpsSetup(t)
	d := newLiveDesk(t, s, "2026-03-02T04:00:00Z")
	d.turn("rehearsal", "Rehearse the open.")
	real := router.Model{Name: "gpt", Provider: router.OpenAIProvider, Client: router.Scripted{}} // answers offline, but is not the scripted model
	if err := d.router.Configure(router.Settings{Route: []router.Model{real}, Instructions: "You run the main desk."}); err != nil {
		t.Fatal(err)
	}
	d.turn("live", "Trade the open.")
	session := d.router.SessionID()

	files, _, _ := auditBundleOf(t, s, "2026-03-02")
	m := files["MANIFEST.txt"]
	for _, want := range []string{
		"model answers: 2 in the day's sessions, 1 of them SCRIPTED",
		"  session " + session + " 2026-03-02T09:31:00+05:30 reply to rehearsal: offline (scripted) SCRIPTED\n",
		"  session " + session + " 2026-03-02T09:32:00+05:30 reply to live: gpt (openai)\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", want, m)
		}
	}
}

// TestAuditHoldsTheConfigInForce: the bundle of a day holds the snapshots
// of the effective config in force that day (the one in force when the
// day began, and each taken during it), not the files as they are at
// export time.
func TestAuditHoldsTheConfigInForce(t *testing.T) {
	s := newOpsDesk(t)
	dir := filepath.Join(filepath.Dir(filepath.Dir(s.DeskDir)), config.HistoryDir)
	snap := func(name, instructions string) {
		opsWrite(t, dir, name, `{"taken":"x","reason":"start","config":{"desks":{"main":{"instructions":"`+instructions+`"}}}}`+"\n")
	}
	snap("20260301T050000.000000000Z.json", "v1, in force when 2 March began")
	snap("20260302T060000.000000000Z.json", "v2, from 11:30 IST on 2 March")
	snap("20260303T060000.000000000Z.json", "v3, of 3 March")
	files, names, _ := auditBundleOf(t, s, "2026-03-02")
	var cfgs []string
	for _, n := range names {
		if strings.HasPrefix(n, "config/") {
			cfgs = append(cfgs, n)
		}
	}
	want := []string{"config/in-force/20260301T050000.000000000Z.json", "config/in-force/20260302T060000.000000000Z.json"}
	if strings.Join(cfgs, " ") != strings.Join(want, " ") {
		t.Fatalf("the bundle's config files = %v, want %v", cfgs, want)
	}
	if !strings.Contains(files[want[0]], "v1, in force") || !strings.Contains(files[want[1]], "v2, from 11:30") {
		t.Errorf("the snapshots' contents differ from the files kept")
	}
	m := files["MANIFEST.txt"]
	for _, w := range []string{
		"config: the config in force on 2026-03-02: 2 snapshots of deskd's effective config",
		"config/in-force/20260301T050000.000000000Z.json: the effective config deskd ran on from 2026-03-01T10:30:00+05:30 to 2026-03-02T11:30:00+05:30",
	} {
		if !strings.Contains(m, w) {
			t.Errorf("MANIFEST.txt lacks %q:\n%s", w, m)
		}
	}
	if strings.Contains(m, "as it is at export time") {
		t.Errorf("with snapshots, the bundle should not hold the config files of export time:\n%s", m)
	}
}
