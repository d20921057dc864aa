package config

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// planBase is diffBase with two calendars, the trading day parsed, and
// the rates desk following NSE.
func planBase() *Config {
	c := diffBase()
	ist := time.FixedZone("Asia/Kolkata", 5*3600+1800)
	c.Location, c.Day = ist, memory.TradingDay{Location: ist}
	c.CalendarsDir = "/etc/deskd/calendars.d"
	c.Calendars = map[string]*triggers.Calendar{
		"NSE": {Name: "NSE", Location: ist, Weekdays: [7]bool{false, true, true, true, true, true, false},
			Sessions: []triggers.Session{{Open: 9*time.Hour + 15*time.Minute, Close: 15*time.Hour + 30*time.Minute}}},
		"BSE": {Name: "BSE", Location: ist, Weekdays: [7]bool{false, true, true, true, true, true, false}},
	}
	c.Desks["rates"].Calendar = "NSE"
	return c
}

// planClone is cloneConfig, with the calendars map copied too (a test
// replaces a calendar, never edits one in place).
func planClone(c *Config) *Config {
	n := cloneConfig(c)
	n.Calendars = maps.Clone(c.Calendars)
	return n
}

// editCalendar replaces the calendar name of c by an edited copy.
func editCalendar(c *Config, name string, edit func(*triggers.Calendar)) {
	cal := *c.Calendars[name]
	cal.Holidays = map[string]string{"2026-03-04": "Holi"}
	if edit != nil {
		edit(&cal)
	}
	c.Calendars[name] = &cal
}

// planWant is the part of a Reload a row of planTests checks; Changes and
// Next are checked against Diff for every row.
type planWant struct {
	start, stop, restart, reconfigure []string
	pinned                            []string // fields
	logLevel                          string
	rewatch                           bool
}

// planTest is one row: the loaded config is the running one (planBase)
// after edit.
type planTest struct {
	name string
	edit func(c *Config)
	want planWant
}

var planTests = []planTest{
	{"nothing", func(c *Config) {}, planWant{}},
	{"desk added", func(c *Config) {
		c.Desks["bonds"] = &Desk{Name: "bonds", Model: "offline"}
	}, planWant{start: []string{"bonds"}}},
	{"desk removed", func(c *Config) { delete(c.Desks, "rates") }, planWant{stop: []string{"rates"}}},
	{"desk added and one removed", func(c *Config) {
		delete(c.Desks, "fx")
		c.Desks["bonds"] = &Desk{Name: "bonds", Model: "offline"}
	}, planWant{start: []string{"bonds"}, stop: []string{"fx"}}},
	{"schedule moved", func(c *Config) { c.Desks["fx"].Schedules[0].Cron = "*/5 * * * *" },
		planWant{reconfigure: []string{"fx"}}},
	{"instructions and queue limit", func(c *Config) {
		c.Desks["rates"].Instructions, c.Desks["rates"].QueueLimit = "Watch rates closely.", 10
	}, planWant{reconfigure: []string{"rates"}}},
	{"desk model changed", func(c *Config) { c.Desks["rates"].Model = "fast" },
		planWant{reconfigure: []string{"rates"}}},
	{"rollover changed", func(c *Config) { c.Desks["fx"].Rollover = keeper.RolloverOff },
		planWant{restart: []string{"fx"}}},
	{"curator disabled", func(c *Config) { c.Desks["rates"].Curator.Enabled = false },
		planWant{restart: []string{"rates"}}},
	{"compact_at_tokens set", func(c *Config) { c.Desks["fx"].CompactAtTokens = 20000 },
		planWant{reconfigure: []string{"fx"}}},
	{"curator's max changes only", func(c *Config) { c.Desks["rates"].Curator.MaxChanges = 2 },
		planWant{reconfigure: []string{"rates"}}},
	{"memory guard changed", func(c *Config) { c.Desks["fx"].Memory.MaxBytes = 1024 },
		planWant{restart: []string{"fx"}}},
	{"restart wins over other changes of the desk", func(c *Config) {
		c.Desks["fx"].Rollover, c.Desks["fx"].Instructions = keeper.RolloverOff, "New."
	}, planWant{restart: []string{"fx"}}},
	{"rollover to trading_day", func(c *Config) { c.Desks["rates"].Rollover = keeper.RolloverTradingDay },
		planWant{restart: []string{"rates"}}},
	{"calendar edited, no trading_day desk", func(c *Config) { editCalendar(c, "NSE", nil) },
		planWant{reconfigure: []string{"fx", "rates"}}},
	{"calendar added", func(c *Config) {
		c.Calendars["LSE"] = &triggers.Calendar{Name: "LSE", Location: time.UTC}
	}, planWant{reconfigure: []string{"fx", "rates"}}},
	{"model of fx's route changed", func(c *Config) {
		m := c.Models["fast"]
		m.Timeout = time.Minute
		c.Models["fast"] = m
	}, planWant{reconfigure: []string{"fx"}}},
	{"fallback model changed", func(c *Config) {
		m := c.Models["offline"]
		m.MaxOutputTokens = 100
		c.Models["offline"] = m
	}, planWant{reconfigure: []string{"fx", "rates"}}},
	{"model of no route added", func(c *Config) {
		c.Models["spare"] = Model{Name: "spare", Provider: router.ScriptedProvider}
	}, planWant{}},
	{"model dropped from the route and then from models", func(c *Config) {
		c.Desks["fx"].Model, c.Desks["fx"].Fallbacks = "offline", nil
		delete(c.Models, "fast")
	}, planWant{reconfigure: []string{"fx"}}},
	{"log level", func(c *Config) { c.Log.Level = "debug" }, planWant{logLevel: "debug"}},
	{"desks folder moved", func(c *Config) { c.DesksDir = "/srv/deskd/desks.d" }, planWant{rewatch: true}},
	{"calendars folder moved", func(c *Config) { c.CalendarsDir = "/srv/deskd/calendars.d" }, planWant{rewatch: true}},
	{"pinned: debug_listen", func(c *Config) { c.DebugListen = "127.0.0.1:6060" },
		planWant{pinned: []string{"debug_listen"}}},
	{"pinned: state_dir", func(c *Config) { c.StateDir = "/srv/deskd" }, planWant{pinned: []string{"state_dir"}}},
	{"pinned: listen", func(c *Config) {
		c.Listen, c.Listens = "127.0.0.1:9000", []string{"127.0.0.1:9000", "unix:/run/deskd/api.sock"}
	}, planWant{pinned: []string{"listen"}}},
	{"pinned: tokens", func(c *Config) {
		c.AuthTokenFile, c.FeedTokenFile, c.MetricsTokenFile = "/etc/deskd/token", "/etc/deskd/feed", "/etc/deskd/scrape"
	}, planWant{pinned: []string{"auth_token_file", "feed_token_file", "metrics_token_file"}}},
	{"pinned: the trading day", func(c *Config) {
		c.Timezone, c.Location, c.RolloverAt = "UTC", time.UTC, "06:00"
		c.Day = memory.TradingDay{Location: time.UTC, Start: 6 * time.Hour}
	}, planWant{pinned: []string{"rollover_at", "timezone"}}},
	{"pinned: log format and shutdown timeout, with the level", func(c *Config) {
		c.Log = Log{Level: "warn", Format: "console"}
		c.ShutdownTimeout = time.Minute
	}, planWant{pinned: []string{"log.format", "shutdown_timeout"}, logLevel: "warn"}},
}

// tradingDayPlanTests are rows whose running config (and so the loaded
// one) has the rates desk roll over by NSE's trading days.
var tradingDayPlanTests = []planTest{
	{"trading_day desk moves to another calendar", func(c *Config) {
		c.Desks["rates"].Calendar = "BSE"
	}, planWant{restart: []string{"rates"}}},
	{"trading_day desk's calendar spelled otherwise", func(c *Config) {
		c.Desks["rates"].Calendar = "nse"
	}, planWant{reconfigure: []string{"rates"}}},
	{"trading_day desk's calendar edited", func(c *Config) {
		editCalendar(c, "NSE", nil)
	}, planWant{restart: []string{"rates"}, reconfigure: []string{"fx"}}},
	{"another calendar edited", func(c *Config) {
		editCalendar(c, "BSE", nil)
	}, planWant{reconfigure: []string{"fx", "rates"}}},
}

func TestPlan(t *testing.T) {
	for _, tt := range planTests {
		t.Run(tt.name, func(t *testing.T) { testPlan(t, tt, planBase()) })
	}
	for _, tt := range tradingDayPlanTests {
		cur := planBase()
		cur.Desks["rates"].Rollover = keeper.RolloverTradingDay
		t.Run(tt.name, func(t *testing.T) { testPlan(t, tt, cur) })
	}
}

// testPlan checks Plan(cur, cur after tt.edit) against tt.want, and the
// Changes and Next of every plan against Diff.
func testPlan(t *testing.T, tt planTest, cur *Config) {
	next := planClone(cur)
	tt.edit(next)
	curCopy := planClone(cur)
	got := Plan(cur, next)

	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("Plan: %s = %q, want %q", what, got, want)
		}
	}
	check("Start", got.Start, tt.want.start)
	check("Stop", got.Stop, tt.want.stop)
	check("Restart", got.Restart, tt.want.restart)
	check("Reconfigure", got.Reconfigure, tt.want.reconfigure)
	var pinnedFields []string
	for _, c := range got.Pinned {
		pinnedFields = append(pinnedFields, c.Field)
	}
	check("Pinned", pinnedFields, tt.want.pinned)
	if got.LogLevel != tt.want.logLevel {
		t.Errorf("Plan: LogLevel = %q, want %q", got.LogLevel, tt.want.logLevel)
	}
	if got.Rewatch != tt.want.rewatch {
		t.Errorf("Plan: Rewatch = %v, want %v", got.Rewatch, tt.want.rewatch)
	}
	if want := Diff(cur, next); !slices.Equal(got.Changes, want) {
		t.Errorf("Plan: Changes =\n%s\nwant Diff's\n%s", changeLines(got.Changes), changeLines(want))
	}
	// Next is next but for the pinned settings, which keep cur's.
	for _, c := range Diff(cur, got.Next) {
		if c.Restart {
			t.Errorf("Next differs from the running config in a pinned setting: %s", c)
		}
	}
	for _, c := range Diff(got.Next, next) {
		if !c.Restart {
			t.Errorf("Next differs from the loaded config in a setting that is not pinned: %s", c)
		}
	}
	if len(Diff(got.Next, next)) != len(got.Pinned) {
		t.Errorf("Next differs from the loaded config in %s, want the pinned %s",
			changeLines(Diff(got.Next, next)), changeLines(got.Pinned))
	}
	if Diff(curCopy, cur) != nil || got.Next == next {
		t.Error("Plan changed the running config, or returned the loaded one itself as Next")
	}
}

// TestPlanPinnedValues: Next runs on the running trading day, listeners
// and state folder, field by field (Location and Day too, which Diff does
// not compare by themselves).
func TestPlanPinnedValues(t *testing.T) {
	cur := planBase()
	next := planClone(cur)
	next.StateDir, next.Timezone, next.Location, next.RolloverAt = "/srv/deskd", "UTC", time.UTC, "06:00"
	next.Day = memory.TradingDay{Location: time.UTC, Start: 6 * time.Hour}
	next.Listen, next.Listens = "127.0.0.1:9000", []string{"127.0.0.1:9000"}
	next.Log.Level = "debug"
	got := Plan(cur, next).Next
	if got.StateDir != cur.StateDir || got.Location != cur.Location || got.Day != cur.Day ||
		got.Listen != cur.Listen || !slices.Equal(got.Listens, cur.Listens) || got.RolloverAt != cur.RolloverAt {
		t.Errorf("Next = state_dir %s, zone %v, day %+v, listen %s %v; want the running ones", got.StateDir, got.Location, got.Day, got.Listen, got.Listens)
	}
	if got.Log.Level != "debug" {
		t.Errorf("Next's log level = %s, want the new debug", got.Log.Level)
	}
}

// TestPlanFromNothing: a daemon with no config yet starts every desk.
func TestPlanFromNothing(t *testing.T) {
	next := planBase()
	got := Plan(nil, next)
	if !slices.Equal(got.Start, []string{"fx", "rates"}) || got.Next != next || len(got.Stop)+len(got.Restart)+len(got.Reconfigure) > 0 {
		t.Errorf("Plan(nil, c) = start %v, stop %v, restart %v, reconfigure %v", got.Start, got.Stop, got.Restart, got.Reconfigure)
	}
}
