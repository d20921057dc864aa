package config_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/triggers"
)

// TestTriggerDefaults: a config without the trigger keys gets their defaults.
func TestTriggerDefaults(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	d := c.Desks["main"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"Listens", strings.Join(c.Listens, ","), "127.0.0.1:7317"},
		{"AuthTokenFile", c.AuthTokenFile, ""},
		{"CalendarsDir", c.CalendarsDir, filepath.Join(filepath.Dir(c.Path), "calendars.d")},
		{"NSE shipped", c.CalendarOf("nse") != nil, true},
		{"QueueLimit", d.QueueLimit, 256},
		{"Coalesce", string(d.Coalesce), "off"},
		{"Calendar", d.Calendar, ""},
		{"PausedTriggers", string(d.PausedTriggers), "queue"},
		{"Schedules[0].On", string(d.Schedules[0].On), "every_day"},
		{"Schedules[0].RunWithin", d.Schedules[0].RunWithin, 5 * time.Minute},
		{"Schedules[0].Calendar", d.Schedules[0].Calendar, ""},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// TestTriggerKeys: every new key, read.
func TestTriggerKeys(t *testing.T) {
	main := sub(t, baseMain, "listen: 127.0.0.1:7317\n", "listen: [\"0.0.0.0:0\", \"unix:/run/deskd/api.sock\"]\nauth_token_file: token\n")
	desk := `model: offline
instructions: hi
queue_limit: 10
coalesce: key
paused_triggers: refuse
calendar: NSE
rollover: trading_day
schedules:
  - {name: open, cron: "15 9 * * *", text: "Open.", on: trading_days, missed: skip}
  - {name: tape, cron: "*/5 * * * *", text: "Tape.", on: market_hours, missed: {run_within: 10m}}
  - {name: eod, cron: "0 18 * * *", text: "EOD.", calendar: mycal, on: trading_days}
`
	path := setup(t, main, map[string]string{
		"desks.d/main.yaml": desk,
		"token":             "s3cret\n",
		"calendars.d/MYCAL.yaml": `timezone: Europe/London
through: 2026-12-31
weekdays: [mon, tue, wed, thu, fri, sat]
sessions: [{open: "08:00", close: "12:00"}, {open: "13:00", close: "16:30"}]
holidays: [{date: "2026-12-25", name: Christmas}]
`,
	})
	c := mustLoad(t, path)
	d := c.Desks["main"]
	if got := strings.Join(c.Listens, ","); got != "0.0.0.0:0,unix:/run/deskd/api.sock" || c.Listen != "0.0.0.0:0" {
		t.Errorf("Listens = %s, Listen = %s", got, c.Listen)
	}
	if c.AuthTokenFile != filepath.Join(filepath.Dir(path), "token") {
		t.Errorf("AuthTokenFile = %s", c.AuthTokenFile)
	}
	if tok, err := config.ReadAuthToken(c.AuthTokenFile); err != nil || tok != "s3cret" {
		t.Errorf("ReadAuthToken = %q, %v", tok, err)
	}
	if d.QueueLimit != 10 || d.Coalesce != "key" || d.Calendar != "NSE" || d.Rollover != "trading_day" || d.PausedTriggers != "refuse" {
		t.Errorf("desk = queue_limit %d, coalesce %s, calendar %s, rollover %s, paused_triggers %s",
			d.QueueLimit, d.Coalesce, d.Calendar, d.Rollover, d.PausedTriggers)
	}
	want := []struct {
		cal    string
		on     triggers.On
		within time.Duration
	}{{"NSE", "trading_days", 0}, {"NSE", "market_hours", 10 * time.Minute}, {"mycal", "trading_days", 5 * time.Minute}}
	for i, w := range want {
		s := d.Schedules[i]
		if s.Calendar != w.cal || s.On != w.on || s.RunWithin != w.within {
			t.Errorf("schedules[%d] = calendar %s, on %s, run_within %v; want %+v", i, s.Calendar, s.On, s.RunWithin, w)
		}
	}
	my := c.CalendarOf("MYCAL")
	if my == nil || my.Location.String() != "Europe/London" || len(my.Sessions) != 2 || !my.Weekdays[time.Saturday] {
		t.Fatalf("MYCAL = %+v", my)
	}
	entries := c.Entries(d)
	if len(entries) != 3 || entries[0].On != triggers.TradingDays || entries[1].On != triggers.MarketHours ||
		entries[2].Calendar != my || entries[0].RunWithin != 0 || entries[1].RunWithin != 10*time.Minute {
		t.Errorf("Entries = %+v", entries)
	}
}

// TestShippedNSE: the NSE calendar deskd ships for 2026.
func TestShippedNSE(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	nse := c.CalendarOf("NSE")
	if nse == nil {
		t.Fatal("no NSE calendar")
	}
	ist := nse.Location
	at := func(m time.Month, d, hh, mm int) time.Time { return time.Date(2026, m, d, hh, mm, 0, 0, ist) }
	tests := []struct {
		name          string
		at            time.Time
		trading, open bool
	}{
		{"an ordinary Monday at 09:15", at(time.March, 2, 9, 15), true, true},
		{"09:14 is before the open", at(time.March, 2, 9, 14), true, false},
		{"15:29 is open", at(time.March, 2, 15, 29), true, true},
		{"15:30 is the close", at(time.March, 2, 15, 30), true, false},
		{"Republic Day", at(time.January, 26, 11, 0), false, false},
		{"Holi", at(time.March, 3, 11, 0), false, false},
		{"Maharashtra civic polls", at(time.January, 15, 11, 0), false, false},
		{"Good Friday", at(time.April, 3, 11, 0), false, false},
		{"Diwali Balipratipada", at(time.November, 10, 11, 0), false, false},
		{"Christmas", at(time.December, 25, 11, 0), false, false},
		{"a Saturday", at(time.March, 7, 11, 0), false, false},
		{"a Sunday", at(time.March, 8, 11, 0), false, false},
		{"Muhurat trading on Sunday 8 Nov", at(time.November, 8, 18, 30), true, true},
	}
	for _, tt := range tests {
		if got := nse.TradingDay(tt.at); got != tt.trading {
			t.Errorf("%s: TradingDay = %v, want %v", tt.name, got, tt.trading)
		}
		if got := nse.Open(tt.at); got != tt.open {
			t.Errorf("%s: Open = %v, want %v", tt.name, got, tt.open)
		}
	}
	if n := len(nse.Holidays); n != 16 {
		t.Errorf("NSE has %d holidays, want 16 (15 of the annual list and 15 January)", n)
	}
}

// TestCalendarOverride: a calendars.d file replaces the shipped one.
func TestCalendarOverride(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{
		"desks.d/main.yaml":      baseDesk,
		"calendars.d/NSE.yaml":   "timezone: Asia/Kolkata\nthrough: 2026-12-31\nsessions: [{open: \"10:00\", close: \"11:00\"}]\n",
		"calendars.d/notes.txt":  "ignored",
		"calendars.d/.NSE.yaml~": "ignored",
	}))
	if nse := c.CalendarOf("NSE"); nse == nil || len(nse.Holidays) != 0 || nse.Sessions[0].Open != 10*time.Hour {
		t.Errorf("NSE = %+v, want the file's", nse)
	}
}

// wantOneProblem loads main and desk (baseMain and baseDesk when "")
// with the more files, and wants exactly one problem, w.
func wantOneProblem(t *testing.T, main, desk string, files map[string]string, w want) {
	t.Helper()
	if main == "" {
		main = baseMain
	}
	if desk == "" {
		desk = baseDesk
	}
	all := map[string]string{"desks.d/main.yaml": desk}
	maps.Copy(all, files)
	_, err := config.Load(setup(t, main, all))
	oneProblem(t, err, w)
}

func TestTriggerProblems(t *testing.T) {
	const mainFile, deskFile = "deskd.yaml", "main.yaml"
	deskWith := func(extra string) string { return baseDesk + extra }
	schedWith := func(t *testing.T, extra string) string {
		return sub(t, baseDesk, `    text: "Check the tape."`, "    text: \"Check the tape.\"\n"+extra)
	}
	tests := []struct {
		name        string
		main, desk  string
		files       map[string]string
		file, field string
		reason      string
	}{
		{name: "queue_limit 0", desk: deskWith("queue_limit: 0\n"), file: deskFile, field: "queue_limit", reason: "out of range"},
		{name: "queue_limit text", desk: deskWith("queue_limit: many\n"), file: deskFile, field: "queue_limit", reason: "want an integer"},
		{name: "coalesce bad", desk: deskWith("coalesce: symbol\n"), file: deskFile, field: "coalesce", reason: `"symbol": want key`},
		{name: "paused_triggers bad", desk: deskWith("paused_triggers: drop\n"), file: deskFile, field: "paused_triggers", reason: `"drop": want queue`},
		{name: "unknown calendar", desk: deskWith("calendar: LSE\n"), file: deskFile, field: "calendar", reason: `unknown calendar "LSE"; known calendars: NSE`},
		{name: "trading_day without calendar", desk: deskWith("rollover: trading_day\n"), file: deskFile, field: "rollover", reason: "needs the desk's calendar"},
		{name: "on without calendar", desk: schedWith(t, "    on: market_hours\n"), file: deskFile, field: "schedules[0].on", reason: "needs a calendar"},
		{name: "on bad", desk: schedWith(t, "    on: weekdays\n    calendar: NSE\n"), file: deskFile, field: "schedules[0].on", reason: `"weekdays": want every_day`},
		{name: "missed bad word", desk: schedWith(t, "    missed: catch_up\n"), file: deskFile, field: "schedules[0].missed", reason: "want skip"},
		{name: "missed without run_within", desk: schedWith(t, "    missed: {}\n"), file: deskFile, field: "schedules[0].missed.run_within", reason: "required"},
		{name: "missed run_within bad", desk: schedWith(t, "    missed: {run_within: soon}\n"), file: deskFile, field: "schedules[0].missed.run_within", reason: "want a duration"},
		{name: "missed unknown key", desk: schedWith(t, "    missed: {run_within: 5m, within: 5m}\n"), file: deskFile, field: "schedules[0].missed.within", reason: "unknown key"},
		{name: "listen beyond loopback without a token", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: 0.0.0.0:7317"),
			file: mainFile, field: "listen", reason: "set auth_token_file"},
		{name: "listen on a host name without a token", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: desk.example.com:7317"),
			file: mainFile, field: "listen", reason: "reachable beyond this host"},
		{name: "listen list item bad", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: [\"127.0.0.1:1\", \"nohost\"]"),
			file: mainFile, field: "listen[1]", reason: "not host:port"},
		{name: "listen empty list", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: []"),
			file: mainFile, field: "listen", reason: "the list is empty: give at least one address"},
		{name: "listen not a string or a list", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: {a: 1}"),
			file: mainFile, field: "listen", reason: "want a string, got a mapping, or a list of addresses"},
		{name: "listen empty unix", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: \"unix:\""),
			file: mainFile, field: "listen", reason: "want unix:PATH"},
		{name: "listen port out of range", main: sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: 127.0.0.1:70000"),
			file: mainFile, field: "listen", reason: "from 0 to 65535"},
		{name: "missing token file", main: baseMain + "auth_token_file: nope\n", file: mainFile, field: "auth_token_file", reason: "cannot read"},
		{name: "empty token file", main: baseMain + "auth_token_file: token\n", files: map[string]string{"token": ""},
			file: mainFile, field: "auth_token_file", reason: "is empty"},
		{name: "calendars_dir missing when set", main: baseMain + "calendars_dir: cals\n", file: mainFile, field: "calendars_dir", reason: "cannot read"},
		{name: "calendar session backwards", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: 2026-12-31\nsessions: [{open: \"15:00\", close: \"09:00\"}]\n"},
			file: "X.yaml", field: "sessions[0].close", reason: "is not after open"},
		{name: "calendar bad date", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: 2026-12-31\nsessions: [{open: \"09:00\", close: \"15:00\"}]\nholidays: [{date: \"2026-02-30\"}]\n"},
			file: "X.yaml", field: "holidays[0].date", reason: "not a date"},
		{name: "calendar bad weekday", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: 2026-12-31\nweekdays: [mon, funday]\nsessions: [{open: \"09:00\", close: \"15:00\"}]\n"},
			file: "X.yaml", field: "weekdays[1]", reason: "want mon"},
		{name: "calendar without sessions", files: map[string]string{"calendars.d/X.yaml": "timezone: UTC\nthrough: 2026-12-31\n"},
			file: "X.yaml", field: "sessions", reason: "required"},
		{name: "calendar unknown zone", files: map[string]string{"calendars.d/X.yaml": "timezone: Mars/Olympus\nthrough: 2026-12-31\nsessions: [{open: \"09:00\", close: \"15:00\"}]\n"},
			file: "X.yaml", field: "timezone", reason: "unknown time zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneProblem(t, tt.main, tt.desk, tt.files, want{tt.file, tt.field, tt.reason})
		})
	}
}

// TestLoopbackWithToken: a token allows listening beyond loopback.
func TestLoopbackWithToken(t *testing.T) {
	main := sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: 0.0.0.0:7317\nauth_token_file: token")
	c := mustLoad(t, setup(t, main, map[string]string{"desks.d/main.yaml": baseDesk, "token": "abc"}))
	if c.Listen != "0.0.0.0:7317" {
		t.Errorf("Listen = %s", c.Listen)
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "unix:/x": true,
		"0.0.0.0:1": false, ":1": false, "10.0.0.1:1": false, "[::]:1": false, "example.com:1": false,
	} {
		if got := config.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestReadClient: a client finds listen and the token file even when the
// desk files do not load.
func TestReadClient(t *testing.T) {
	main := sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: [\"unix:/tmp/d.sock\", \"127.0.0.1:9\"]\nauth_token_file: tok")
	path := setup(t, main, map[string]string{"desks.d/main.yaml": "model: nonexistent\n"})
	cc, err := config.ReadClient(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cc.Listens, ",") != "unix:/tmp/d.sock,127.0.0.1:9" || cc.AuthTokenFile != filepath.Join(filepath.Dir(path), "tok") {
		t.Errorf("ReadClient = %+v", cc)
	}
	if _, err := config.ReadClient(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("ReadClient of a missing file succeeded")
	}
	_ = os.Remove(path)
}
