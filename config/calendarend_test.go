package config_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/triggers"
)

// TestShippedCalendarsKnowTheirEnd: every shipped calendar states through;
// NSE covers 2026 and lists no holiday after it (none is invented).
func TestShippedCalendarsKnowTheirEnd(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	if len(c.Calendars) == 0 {
		t.Fatal("no shipped calendar")
	}
	for name, cal := range c.Calendars {
		if cal.Through == "" {
			t.Errorf("shipped calendar %s has no through", name)
		}
		for _, d := range cal.Dates() {
			if d > cal.Through {
				t.Errorf("shipped calendar %s lists %s, after its through %s", name, d, cal.Through)
			}
		}
	}
	if nse := c.CalendarOf("NSE"); nse == nil || nse.Through != "2026-12-31" {
		t.Errorf("NSE through = %+v, want 2026-12-31", nse)
	}
	if c.CalendarWarnDays != config.DefaultCalendarWarnDays || c.BeyondCalendar != triggers.BeyondHold {
		t.Errorf("calendar_warn_days = %d, beyond_calendar = %q; want %d, hold", c.CalendarWarnDays, c.BeyondCalendar, config.DefaultCalendarWarnDays)
	}
	if d := c.Desks["main"]; d.BeyondCalendar != triggers.BeyondHold {
		t.Errorf("desk beyond_calendar = %q, want the default hold", d.BeyondCalendar)
	}
}

// TestCalendarExtends: calendars.d/NSE.yaml with extends: NSE adds its
// holidays and special sessions to the shipped NSE (a date it lists
// replaces the shipped one's), moves through, and inherits the time zone,
// weekdays and sessions; the shipped holidays stay.
func TestCalendarExtends(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{
		"desks.d/main.yaml": baseDesk + "calendar: NSE\n",
		"calendars.d/NSE.yaml": `extends: NSE
through: 2027-12-31
holidays:
  - {date: "2027-03-01", name: Test holiday one}
special_sessions:
  - {date: "2026-11-08", name: Muhurat trading, open: "18:15", close: "19:15"}
`,
	}))
	nse := c.CalendarOf("NSE")
	if nse == nil {
		t.Fatal("no NSE")
	}
	if nse.Through != "2027-12-31" {
		t.Errorf("through = %s, want the extension's 2027-12-31", nse.Through)
	}
	if nse.Location == nil || nse.Location.String() != "Asia/Kolkata" || len(nse.Sessions) != 1 || !nse.Weekdays[time.Monday] || nse.Weekdays[time.Saturday] {
		t.Errorf("inherited zone, sessions, weekdays = %v, %v, %v", nse.Location, nse.Sessions, nse.Weekdays)
	}
	ist, _ := time.LoadLocation("Asia/Kolkata")
	for _, tt := range []struct {
		name    string
		at      time.Time
		trading bool
	}{
		{"shipped Republic Day 2026", time.Date(2026, 1, 26, 12, 0, 0, 0, ist), false},
		{"added 2027 holiday", time.Date(2027, 3, 1, 12, 0, 0, 0, ist), false},
		{"a 2027 weekday", time.Date(2027, 3, 2, 12, 0, 0, 0, ist), true},
	} {
		if got := nse.TradingDay(tt.at); got != tt.trading {
			t.Errorf("%s: TradingDay = %v, want %v", tt.name, got, tt.trading)
		}
		if !nse.Covers(tt.at) {
			t.Errorf("%s: not covered by the extended calendar", tt.name)
		}
	}
	if sd := nse.Special["2026-11-08"]; len(sd.Sessions) != 1 || sd.Sessions[0].Open != 18*time.Hour+15*time.Minute {
		t.Errorf("Muhurat = %+v, want the extension's one session at 18:15", sd)
	}
	// A file without extends still replaces the shipped calendar (TestCalendarOverride).
}

// TestCalendarEndProblems: through is required and a date; an extension
// names a shipped calendar and moves through no earlier; a holiday after
// through is refused; beyond_calendar and calendar_warn_days are checked.
func TestCalendarEndProblems(t *testing.T) {
	const sessions = "sessions: [{open: \"09:00\", close: \"15:00\"}]\n"
	tests := []struct {
		name              string
		main, desk        string
		files             map[string]string
		file, field, want string
	}{
		{name: "no through", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\n" + sessions},
			file: "X.yaml", field: "through", want: "required"},
		{name: "through not a date", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: end of 2026\n" + sessions},
			file: "X.yaml", field: "through", want: "not a date"},
		{name: "holiday after through", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: 2026-12-31\n" + sessions +
			"holidays: [{date: \"2027-01-26\", name: Republic Day}]\n"},
			file: "X.yaml", field: "holidays[0].date", want: "after through (2026-12-31)"},
		{name: "special session after through", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: 2026-12-31\n" + sessions +
			"special_sessions: [{date: \"2027-01-03\", open: \"10:00\", close: \"11:00\"}]\n"},
			file: "X.yaml", field: "special_sessions[0].date", want: "after through"},
		{name: "extension moves through back", files: map[string]string{"calendars.d/NSE.yaml": "extends: NSE\nthrough: 2026-06-30\n"},
			file: "NSE.yaml", field: "through", want: "before 2026-12-31, the end of the shipped NSE"},
		{name: "extension holiday after its through", files: map[string]string{"calendars.d/NSE.yaml": "extends: NSE\nthrough: 2026-12-31\nholidays: [{date: \"2027-01-26\", name: Republic Day}]\n"},
			file: "NSE.yaml", field: "holidays[0].date", want: "after through"},
		{name: "extension without through", files: map[string]string{"calendars.d/NSE.yaml": "extends: NSE\nholidays: [{date: \"2026-12-30\", name: X}]\n"},
			file: "NSE.yaml", field: "through", want: "required"},
		{name: "extends unknown", files: map[string]string{"calendars.d/LSE.yaml": "extends: LSE\nthrough: 2027-12-31\n"},
			file: "LSE.yaml", field: "extends", want: `"LSE" is not a calendar deskd ships; it ships NSE`},
		{name: "beyond_calendar bad in the main file", main: baseMain + "beyond_calendar: guess\n",
			file: "deskd.yaml", field: "beyond_calendar", want: `"guess": want hold`},
		{name: "beyond_calendar bad in a desk", desk: baseDesk + "beyond_calendar: everyday\n",
			file: "main.yaml", field: "beyond_calendar", want: `"everyday": want hold`},
		{name: "calendar_warn_days negative", main: baseMain + "calendar_warn_days: -1\n",
			file: "deskd.yaml", field: "calendar_warn_days", want: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneProblem(t, tt.main, tt.desk, tt.files, want{tt.file, tt.field, tt.want})
		})
	}
}

// TestBeyondCalendarSettings: the main file's beyond_calendar is the
// desks' default; a desk's own wins; both reach the desk's schedules, and
// calendar_warn_days is read.
func TestBeyondCalendarSettings(t *testing.T) {
	sched := "  - {name: tape, cron: \"0 10 * * *\", text: T, calendar: NSE, on: market_hours}\n"
	c := mustLoad(t, setup(t, baseMain+"beyond_calendar: weekdays\ncalendar_warn_days: 45\n", map[string]string{
		"desks.d/main.yaml":  baseDesk + sched,
		"desks.d/other.yaml": baseDesk + sched + "beyond_calendar: hold\n",
	}))
	if c.CalendarWarnDays != 45 || c.BeyondCalendar != triggers.BeyondWeekdays {
		t.Errorf("calendar_warn_days = %d, beyond_calendar = %q", c.CalendarWarnDays, c.BeyondCalendar)
	}
	for desk, want := range map[string]triggers.Beyond{"main": triggers.BeyondWeekdays, "other": triggers.BeyondHold} {
		d := c.Desks[desk]
		if d.BeyondCalendar != want {
			t.Errorf("desk %s: beyond_calendar = %q, want %q", desk, d.BeyondCalendar, want)
		}
		for _, e := range c.Entries(d) {
			if e.Beyond != want {
				t.Errorf("desk %s: schedule %s's Beyond = %q, want %q", desk, e.Name, e.Beyond, want)
			}
		}
	}
	if got := c.CalendarsInUse(); len(got) != 1 || got[0].Name != "NSE" {
		t.Errorf("CalendarsInUse = %v, want NSE", got)
	}
}

// TestWarningsCalendarEnding: check-config's warnings name a calendar in
// use from calendar_warn_days before its end (counted on deskd's trading
// dates), the desks that follow it and what to do; not before, and not a
// calendar no desk follows.
func TestWarningsCalendarEnding(t *testing.T) {
	ist, _ := time.LoadLocation("Asia/Kolkata")
	c := mustLoad(t, setup(t, baseMain, map[string]string{
		"desks.d/main.yaml":  baseDesk + "calendar: NSE\n",
		"desks.d/other.yaml": baseDesk + "  - {name: open, cron: \"15 9 * * *\", text: T, calendar: nse, on: trading_days}\n",
		"desks.d/none.yaml":  baseDesk,
	}))
	for _, tt := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"31 days before", time.Date(2026, 11, 30, 12, 0, 0, 0, ist), ""},
		{"30 days before", time.Date(2026, 12, 1, 12, 0, 0, 0, ist), "calendar NSE (desks main, other) ends 2026-12-31, in 30 days; add the exchange's published dates in NSE.yaml of calendars_dir with extends: NSE and a later through"},
		{"the trading date, not UTC's", time.Date(2026, 12, 30, 19, 0, 0, 0, time.UTC), "calendar NSE (desks main, other) ends today, 2026-12-31"},
		{"past the end", time.Date(2027, 1, 26, 9, 59, 50, 0, ist), "calendar NSE (desks main, other) ended 2026-12-31, 26 days ago"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range config.Warnings(c, tt.at) {
				if w.File != c.Path {
					t.Errorf("warning names %s, want the main file", w.File)
				}
				got = append(got, w.Reason)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("Warnings = %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.want)):
				t.Errorf("Warnings = %q, want one starting %q", got, tt.want)
			}
		})
	}
}

// TestCostWarningSkipsHeldSlots: the cost warning counts only slots that
// fire: past its calendar's end, a market_hours schedule under hold
// fires nothing (the calendar's own warning says so), under weekdays it
// fires again.
func TestCostWarningSkipsHeldSlots(t *testing.T) {
	t.Setenv("DESKD_TEST_WARN_KEY", "sk-test")
	desk := "model: gpt\ninstructions: x\ncalendar: NSE\nschedules:\n  - {name: tick, cron: \"*/15 * * * *\", text: t, on: market_hours}\n"
	now := time.Date(2027, 1, 25, 3, 0, 0, 0, time.UTC) // Monday 08:30 IST, past NSE's end
	for _, tt := range []struct {
		beyond string
		cost   bool
	}{{"hold", false}, {"weekdays", true}} {
		c := mustLoad(t, setup(t, realMain, map[string]string{"desks.d/main.yaml": desk + "beyond_calendar: " + tt.beyond + "\n"}))
		cost := false
		for _, w := range config.Warnings(c, now) {
			cost = cost || strings.Contains(w.Reason, "with no budget")
		}
		if cost != tt.cost {
			t.Errorf("beyond_calendar: %s: cost warning %v, want %v (%v)", tt.beyond, cost, tt.cost, config.Warnings(c, now))
		}
	}
}

// TestSnapshotKeepsCalendarEnds: the config in force kept for audits
// names each calendar's end and the beyond_calendar policies, so that
// moving a calendar's through (extends) is a snapshot of its own.
func TestSnapshotKeepsCalendarEnds(t *testing.T) {
	state := t.TempDir()
	c := mustLoad(t, setup(t, baseMain+"beyond_calendar: weekdays\n", map[string]string{"desks.d/main.yaml": baseDesk + "calendar: NSE\nbeyond_calendar: hold\n"}))
	c.StateDir = state
	at := time.Date(2026, 12, 2, 4, 30, 0, 0, time.UTC)
	first, err := config.WriteSnapshot(c, at, "start")
	if err != nil || first == "" {
		t.Fatalf("WriteSnapshot = %q, %v", first, err)
	}
	b, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"calendars_through": {`, `"NSE": "2026-12-31"`, `"calendar_warn_days": 30`, `"beyond_calendar": "weekdays"`, `"beyond_calendar": "hold"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("snapshot lacks %s:\n%s", want, b)
		}
	}
	extended := mustLoad(t, setup(t, baseMain+"beyond_calendar: weekdays\n", map[string]string{"desks.d/main.yaml": baseDesk + "calendar: NSE\nbeyond_calendar: hold\n",
		"calendars.d/NSE.yaml": "extends: NSE\nthrough: 2027-12-31\n"}))
	extended.StateDir, extended.Path = state, c.Path
	for name, d := range extended.Desks {
		d.Path = c.Desks[name].Path
	}
	extended.DesksDir, extended.CalendarsDir = c.DesksDir, c.CalendarsDir
	if second, err := config.WriteSnapshot(extended, at.Add(time.Hour), "reload"); err != nil || second == "" {
		t.Errorf("WriteSnapshot after NSE's through moved = %q, %v; want a new snapshot", second, err)
	}
}

// TestPlanCalendarChanges: a reload that moves a calendar's end
// (extends) or changes calendar_warn_days reconfigures the running desks,
// so that their schedules and status follow it at once.
func TestPlanCalendarChanges(t *testing.T) {
	files := map[string]string{"desks.d/main.yaml": baseDesk + "calendar: NSE\n"}
	cur := mustLoad(t, setup(t, baseMain, files))
	for _, tt := range []struct {
		name  string
		main  string
		extra map[string]string
	}{
		{"extends moves through", baseMain, map[string]string{"calendars.d/NSE.yaml": "extends: NSE\nthrough: 2027-12-31\n"}},
		{"calendar_warn_days", baseMain + "calendar_warn_days: 45\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := map[string]string{}
			for k, v := range files {
				fs[k] = v
			}
			for k, v := range tt.extra {
				fs[k] = v
			}
			next := mustLoad(t, setup(t, tt.main, fs))
			next.Path, next.StateDir, next.DesksDir, next.CalendarsDir = cur.Path, cur.StateDir, cur.DesksDir, cur.CalendarsDir
			for name, d := range next.Desks {
				d.Path = cur.Desks[name].Path
			}
			if r := config.Plan(cur, next); !slices.Contains(r.Reconfigure, "main") {
				t.Errorf("Plan: reconfigure %v, restart %v; want desk main reconfigured", r.Reconfigure, r.Restart)
			}
		})
	}
}
