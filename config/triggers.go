package config

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/triggers"
)

// This file reads the settings of the HTTP API (listen, auth_token_file),
// the exchange calendars (calendars_dir, and the ones deskd ships), and a
// desk's trigger settings (queue_limit, coalesce, calendar, and each
// schedule's calendar, on and missed).

// shipped holds the calendars deskd ships, one <NAME>.yaml each.
//
//go:embed calendars/*.yaml
var shipped embed.FS

var calendarNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// DefaultCalendarWarnDays is calendar_warn_days when the main file says
// nothing: deskd warns of a calendar's end from 30 days before it.
const DefaultCalendarWarnDays = 30

// MaxCalendarWarnDays bounds calendar_warn_days.
const MaxCalendarWarnDays = 366

// loadBeyond reads beyond_calendar of n, defaulting to def.
func loadBeyond(n node, def triggers.Beyond) triggers.Beyond {
	v, st := n.str("beyond_calendar")
	if st != set {
		return def
	}
	b := triggers.Beyond(v)
	if b != triggers.BeyondHold && b != triggers.BeyondWeekdays {
		n.problem("beyond_calendar", "%q: want hold (past a calendar's end, its trading_days and market_hours slots are held and recorded missed) or weekdays (they fire on its weekdays and sessions, with no holidays known)", v)
		return def
	}
	return b
}

// loadListen reads listen: one address or a list of them, each host:port
// or unix:PATH. Port 0 asks the system for a free port (tests).
func loadListen(root node, c *Config) {
	c.Listen = DefaultListen
	c.Listens = []string{DefaultListen}
	v, ok := root.get("listen")
	if !ok {
		return
	}
	addrs := root.oneOrList("listen", v, oneOrList{one: "a string", list: "a list of addresses", empty: "give at least one address"}, checkListen)
	if len(addrs) > 0 {
		c.Listen, c.Listens = addrs[0], addrs
	}
}

// checkListen checks one listen address: host:port with a port from 0
// to 65535, or unix:PATH.
func checkListen(addr string) error {
	if p, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("%q: want unix:PATH, the path of the socket", addr)
		}
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (or unix:PATH): %v", addr, unwrapAddrErr(err))
	}
	var n int
	if _, err := fmt.Sscanf(port, "%d", &n); err != nil || fmt.Sprint(n) != port || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// IsLoopback reports whether a listen address is reachable from this host
// only: a unix socket, localhost, or a loopback IP.
func IsLoopback(addr string) bool {
	if strings.HasPrefix(addr, UnixPrefix) {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loadAuth reads auth_token_file, and refuses a listen address beyond
// loopback without it.
func loadAuth(root node, c *Config, dir string) {
	if f, st := root.str("auth_token_file"); st == set {
		switch p, err := expandKeyFile(f); {
		case strings.TrimSpace(f) == "":
			root.problem("auth_token_file", "must not be empty")
		case err != nil:
			root.problem("auth_token_file", "%v", err)
		default:
			c.AuthTokenFile = resolve(dir, p)
			if err := checkTokenFile(c.AuthTokenFile); err != nil {
				root.problem("auth_token_file", "%v", err)
			}
		}
	}
	if c.AuthTokenFile != "" {
		return
	}
	if _, st := root.str("auth_token_file"); st != absent {
		return // reported above
	}
	for _, a := range c.Listens {
		if checkListen(a) == nil && !IsLoopback(a) {
			root.problem("listen", "%q is reachable beyond this host: set auth_token_file, or listen on 127.0.0.1, [::1], localhost or a unix: socket", a)
		}
	}
}

// ReadAuthToken reads the API's bearer token from path: the file's first
// line, without surrounding spaces. The file must be a regular file of at
// most 16 KiB; an empty token is an error.
func ReadAuthToken(path string) (string, error) {
	b, err := readSecretFile(path)
	if err != nil {
		return "", fmt.Errorf("read auth token from %s: %w", path, err)
	}
	tok := firstLineToken(b)
	if tok == "" {
		return "", fmt.Errorf("read auth token: %s holds no token on its first line", path)
	}
	return tok, nil
}

// checkTokenFile checks a token file as checkKeyFile does, and that its
// first line, where ReadAuthToken reads the token, holds one.
func checkTokenFile(p string) error {
	if err := checkKeyFile(p); err != nil {
		return err
	}
	b, err := readSecretFile(p)
	if err != nil {
		return err
	}
	if firstLineToken(b) == "" {
		return errors.New("the file it names holds no token on its first line, where the token is read from")
	}
	return nil
}

// loadCalendars reads the shipped calendars, then calendars_dir, into
// c.Calendars (keyed by upper-case name). A file of calendars_dir replaces
// the shipped calendar of its name, unless it says extends: then it adds
// to that shipped calendar (mergeCalendar).
func loadCalendars(root node, c *Config, dir string) {
	c.Calendars = map[string]*triggers.Calendar{}
	c.BeyondCalendar = loadBeyond(root, triggers.BeyondHold)
	c.CalendarWarnDays = DefaultCalendarWarnDays
	if n, st := root.integer("calendar_warn_days"); st == set {
		c.CalendarWarnDays = n
		if n < 0 || n > MaxCalendarWarnDays {
			root.problem("calendar_warn_days", "%d is out of range: want 0 (no warning before the end) to %d", n, MaxCalendarWarnDays)
		}
	}
	base := map[string]*triggers.Calendar{}
	entries, _ := fs.ReadDir(shipped, "calendars")
	for _, e := range entries {
		data, err := shipped.ReadFile("calendars/" + e.Name())
		if err != nil {
			root.s.add("(shipped) "+e.Name(), "", "cannot read: %v", err)
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".yaml")
		if cal := loadCalendar(root.s, "(shipped calendar) "+e.Name(), name, data, nil); cal != nil {
			c.Calendars[strings.ToUpper(name)] = cal
			base[strings.ToUpper(name)] = cal
		}
	}
	c.CalendarsDir = resolve(dir, DefaultCalendarsDir)
	explicit := false
	if d, st := root.str("calendars_dir"); st == set {
		if strings.TrimSpace(d) == "" {
			root.problem("calendars_dir", "must not be empty (default %s)", DefaultCalendarsDir)
			return
		}
		c.CalendarsDir, explicit = resolve(dir, d), true
	} else if st == invalid {
		return
	}
	files, err := os.ReadDir(c.CalendarsDir)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return
	}
	if err != nil {
		root.problem("calendars_dir", "cannot read %s: %v", c.CalendarsDir, pathErr(err))
		return
	}
	for _, e := range files {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok || isIgnored(e.Name()) || e.IsDir() {
			continue
		}
		p := filepath.Join(c.CalendarsDir, e.Name())
		if !calendarNameRE.MatchString(name) {
			root.s.add(p, "", "bad calendar name %q (the file name without .yaml): want %s", name, calendarNameRE)
			continue
		}
		data, ok := readConfigFile(root.s, p)
		if !ok {
			continue
		}
		if cal := loadCalendar(root.s, p, name, data, base); cal != nil {
			c.Calendars[strings.ToUpper(name)] = cal
		}
	}
}

// loadCalendar reads one calendar file:
//
//	timezone: Asia/Kolkata
//	through: 2026-12-31                      # the last date it covers (required)
//	weekdays: [mon, tue, wed, thu, fri]      # the default
//	sessions: [{open: "09:15", close: "15:30"}]
//	holidays: [{date: "2026-01-26", name: Republic Day}]
//	special_sessions: [{date: "2026-11-08", name: Muhurat trading, open: "18:00", close: "19:00"}]
//
// A file of calendars_dir may instead say extends: NAME (a calendar of
// shipped): it then starts from a copy of that calendar, adds its
// holidays and special sessions to the shipped ones (a date it lists
// replaces the shipped entry of that date), moves through (to a date no
// earlier than the shipped one), and replaces timezone, weekdays and
// sessions only where it gives them. shipped is nil for a shipped file.
func loadCalendar(s *sink, file, name string, data []byte, shipped map[string]*triggers.Calendar) *triggers.Calendar {
	root, ok := parseYAML(s, file, data)
	if !ok {
		return nil
	}
	root.only("extends", "holidays", "sessions", "special_sessions", "through", "timezone", "weekdays")
	cal := &triggers.Calendar{Name: name, Holidays: map[string]string{}, Special: map[string]triggers.SpecialDay{}}
	var base *triggers.Calendar
	if ext, st := root.str("extends"); st == set {
		var known []string
		for _, b := range shipped {
			known = append(known, b.Name)
		}
		slices.Sort(known)
		switch {
		case shipped == nil:
			root.problem("extends", "a shipped calendar extends no other")
		case shipped[strings.ToUpper(strings.TrimSpace(ext))] == nil:
			root.problem("extends", "%q is not a calendar deskd ships; it ships %s", ext, strings.Join(known, ", "))
			return nil
		default:
			base = shipped[strings.ToUpper(strings.TrimSpace(ext))]
			cal.Location, cal.Weekdays = base.Location, base.Weekdays
			cal.Sessions = slices.Clone(base.Sessions)
			for d, h := range base.Holidays {
				cal.Holidays[d] = h
			}
			for d, sd := range base.Special {
				cal.Special[d] = triggers.SpecialDay{Name: sd.Name, Sessions: slices.Clone(sd.Sessions)}
			}
		}
	} else if st == invalid {
		return nil
	}
	tz, tzOK := "", false
	if base == nil {
		tz, tzOK = root.requiredStr("timezone")
	} else if v, st := root.str("timezone"); st == set {
		tz, tzOK = v, true
	}
	if tzOK {
		if loc, err := time.LoadLocation(tz); err != nil || tz == "Local" {
			root.problem("timezone", "unknown time zone %q", tz)
		} else {
			cal.Location = loc
		}
	}
	late := false // a date after through was reported: Check would say it again
	date := func(n node, key string) (string, bool) {
		v, ok := n.get(key)
		if !ok {
			n.problem(key, "required")
			return "", false
		}
		switch v := v.(type) {
		case time.Time:
			return v.UTC().Format(time.DateOnly), true
		case string:
			if t, err := time.Parse(time.DateOnly, v); err == nil && t.Format(time.DateOnly) == v {
				return v, true
			}
		}
		n.problem(key, "%v is not a date: want YYYY-MM-DD", v)
		return "", false
	}
	if _, ok := root.get("through"); !ok {
		root.problem("through", "required: the last date the calendar covers (its holidays are known up to it), such as through: 2026-12-31; past it deskd does not guess (beyond_calendar)")
	} else if d, ok := date(root, "through"); ok {
		cal.Through = d
		if base != nil && d < base.Through {
			late = true // the base's own dates would be after it: said once, here
			root.problem("through", "%s is before %s, the end of the shipped %s it extends: an extension may only move the end later", d, base.Through, base.Name)
		}
	}
	days := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	if wd, st := root.list("weekdays"); st == set {
		cal.Weekdays = [7]bool{}
		for i, v := range wd {
			d, _ := v.(string)
			j := slices.Index(days, strings.ToLower(strings.TrimSpace(d)))
			if j < 0 {
				root.s.add(file, fmt.Sprintf("weekdays[%d]", i), "want mon, tue, wed, thu, fri, sat or sun, got %v", v)
				continue
			}
			cal.Weekdays[j] = true
		}
	} else if st == absent && base == nil {
		for d := time.Monday; d <= time.Friday; d++ {
			cal.Weekdays[d] = true
		}
	}
	session := func(n node) (triggers.Session, bool) {
		var ses triggers.Session
		okAll := true
		for _, k := range []string{"open", "close"} {
			v, ok := n.requiredStr(k)
			if !ok {
				okAll = false
				continue
			}
			d, ok := parseClock(v)
			if !ok && v == "24:00" && k == "close" {
				d, ok = 24*time.Hour, true
			}
			if !ok {
				n.problem(k, "%q is not a time of day: want \"HH:MM\", 24-hour", v)
				okAll = false
				continue
			}
			if k == "open" {
				ses.Open = d
			} else {
				ses.Close = d
			}
		}
		if okAll && ses.Open >= ses.Close {
			n.problem("close", "%s is not after open", clockString(ses.Close))
			okAll = false
		}
		return ses, okAll
	}
	if ss, st := root.list("sessions"); st == set {
		cal.Sessions = nil
		if len(ss) == 0 {
			root.problem("sessions", "the list is empty: give the regular trading sessions, such as [{open: \"09:15\", close: \"15:30\"}]")
		}
		for i, v := range ss {
			n, ok := root.asMapping(fmt.Sprintf("sessions[%d]", i), v)
			if !ok {
				continue
			}
			n.only("close", "open")
			if ses, ok := session(n); ok {
				cal.Sessions = append(cal.Sessions, ses)
			}
		}
	} else if st == absent && base == nil {
		root.problem("sessions", "required: the regular trading sessions, such as [{open: \"09:15\", close: \"15:30\"}]")
	}
	// afterEnd adds a problem if d is past the calendar's through.
	afterEnd := func(n node, d string) {
		if cal.Through != "" && d > cal.Through {
			late = true
			n.problem("date", "%s is after through (%s): move through to the last date the file covers", d, cal.Through)
		}
	}
	if hs, st := root.list("holidays"); st == set {
		mine := map[string]bool{}
		for i, v := range hs {
			n, ok := root.asMapping(fmt.Sprintf("holidays[%d]", i), v)
			if !ok {
				continue
			}
			n.only("date", "name")
			d, ok := date(n, "date")
			name, _ := n.str("name")
			if ok {
				if mine[d] {
					n.problem("date", "%s is listed twice", d)
				}
				mine[d] = true
				afterEnd(n, d)
				cal.Holidays[d] = name
			}
		}
	}
	if ss, st := root.list("special_sessions"); st == set {
		mine := map[string]bool{}
		for i, v := range ss {
			n, ok := root.asMapping(fmt.Sprintf("special_sessions[%d]", i), v)
			if !ok {
				continue
			}
			n.only("close", "date", "name", "open")
			d, okDate := date(n, "date")
			name, _ := n.str("name")
			ses, okSes := session(n)
			if okDate && okSes {
				afterEnd(n, d)
				sd := cal.Special[d]
				if !mine[d] { // the file's own sessions of a date replace the shipped ones
					sd = triggers.SpecialDay{}
				}
				mine[d] = true
				sd.Name = name
				sd.Sessions = append(sd.Sessions, ses)
				slices.SortFunc(sd.Sessions, func(a, b triggers.Session) int { return int(a.Open - b.Open) })
				cal.Special[d] = sd
			}
		}
	}
	if len(cal.Sessions) == 0 || cal.Location == nil || cal.Through == "" || late {
		return nil
	}
	if err := cal.Check(); err != nil {
		root.s.add(file, "", "%v", err)
		return nil
	}
	return cal
}

func clockString(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// loadDeskTriggers reads a desk's queue_limit, coalesce, calendar and
// paused_triggers.
func loadDeskTriggers(root node, d *Desk, c *Config) {
	d.QueueLimit = triggers.DefaultQueueLimit
	if n, st := root.integer("queue_limit"); st == set {
		d.QueueLimit = n
		if n < 1 || n > triggers.MaxQueueLimit {
			root.problem("queue_limit", "%d is out of range: want 1 to %d", n, triggers.MaxQueueLimit)
		}
	}
	d.Coalesce = triggers.CoalesceOff
	if v, st := root.str("coalesce"); st == set {
		d.Coalesce = triggers.Coalesce(v)
		if d.Coalesce != triggers.CoalesceOff && d.Coalesce != triggers.CoalesceKey {
			root.problem("coalesce", "%q: want key (a market trigger replaces the queued one of the same key) or off", v)
		}
	}
	if v, st := root.str("calendar"); st == set {
		d.Calendar = v
		checkCalendarRef(root, "calendar", v, c)
	}
	d.BeyondCalendar = loadBeyond(root, c.BeyondCalendar)
	d.PausedTriggers = triggers.PausedQueue
	if v, st := root.str("paused_triggers"); st == set {
		d.PausedTriggers = triggers.PausedTriggers(v)
		if d.PausedTriggers != triggers.PausedQueue && d.PausedTriggers != triggers.PausedRefuse {
			root.problem("paused_triggers", "%q: want queue (triggers wait while the desk is paused) or refuse", v)
		}
	}
}

// loadScheduleTriggers reads a schedule's calendar, on and missed.
func loadScheduleTriggers(sn node, sc *Schedule, c *Config) {
	if v, st := sn.str("calendar"); st == set {
		sc.Calendar = v
		checkCalendarRef(sn, "calendar", v, c)
	}
	sc.On = triggers.EveryDay
	if v, st := sn.str("on"); st == set {
		sc.On = triggers.On(v)
		if sc.On != triggers.EveryDay && sc.On != triggers.TradingDays && sc.On != triggers.MarketHours {
			sn.problem("on", "%q: want every_day, trading_days or market_hours", v)
		}
	}
	sc.RunWithin = triggers.DefaultRunWithin
	v, ok := sn.get("missed")
	if !ok {
		return
	}
	switch v := v.(type) {
	case string:
		if v != "skip" {
			sn.problem("missed", "%q: want skip, or {run_within: DURATION}", v)
		}
		sc.RunWithin = 0
	default:
		m, ok := sn.asMapping(sn.field("missed"), v)
		if !ok {
			return
		}
		m.only("run_within")
		if d, st := m.duration("run_within"); st == set {
			sc.RunWithin = d
			if d <= 0 {
				m.problem("run_within", "%v: want more than 0 (or missed: skip)", d)
			}
		} else if st == absent {
			m.problem("run_within", "required: how late a missed slot may still run, such as \"10m\"")
		}
	}
}

// finishDeskTriggers gives schedules the desk's calendar, and checks what
// needs a calendar has one.
func finishDeskTriggers(root node, d *Desk) {
	for i := range d.Schedules {
		sc := &d.Schedules[i]
		if sc.Calendar == "" {
			sc.Calendar = d.Calendar
		}
		if sc.Calendar == "" && (sc.On == triggers.TradingDays || sc.On == triggers.MarketHours) {
			root.s.add(root.file, fmt.Sprintf("%s[%d].on", root.field("schedules"), i),
				"%s needs a calendar: set calendar on the schedule or the desk (deskd ships NSE)", sc.On)
		}
	}
	if d.Rollover == keeper.RolloverTradingDay && d.Calendar == "" {
		root.problem("rollover", "trading_day needs the desk's calendar: set calendar (deskd ships NSE)")
	}
}

// checkCalendarRef adds a problem if name is not a known calendar.
func checkCalendarRef(n node, field, name string, c *Config) {
	if _, ok := c.Calendars[strings.ToUpper(name)]; ok {
		return
	}
	known := make([]string, 0, len(c.Calendars))
	for _, cal := range c.Calendars {
		known = append(known, cal.Name)
	}
	slices.Sort(known)
	n.problem(field, "unknown calendar %q; known calendars: %s (files <NAME>.yaml in %s add more)",
		name, strings.Join(known, ", "), c.CalendarsDir)
}

// CalendarsInUse returns the calendars the desks of c follow (a desk's
// calendar, its schedules'), sorted by name.
func (c *Config) CalendarsInUse() []*triggers.Calendar {
	seen := map[string]*triggers.Calendar{}
	for _, d := range c.Desks {
		names := []string{d.Calendar}
		for _, sc := range d.Schedules {
			names = append(names, sc.Calendar)
		}
		for _, n := range names {
			if cal := c.CalendarOf(n); cal != nil {
				seen[strings.ToUpper(cal.Name)] = cal
			}
		}
	}
	out := make([]*triggers.Calendar, 0, len(seen))
	for _, cal := range seen {
		out = append(out, cal)
	}
	slices.SortFunc(out, func(a, b *triggers.Calendar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CalendarEnd is a calendar in use that ends within calendar_warn_days
// (CalendarsEnding).
type CalendarEnd struct {
	Calendar *triggers.Calendar
	// DaysLeft counts deskd's trading dates from today to the calendar's
	// through: 0 on it, negative past it.
	DaysLeft int
	// Desks are the desks that follow it, sorted.
	Desks []string
}

// CalendarsEnding returns the calendars in use (CalendarsInUse) that end
// within c.CalendarWarnDays of now's trading date, or have ended.
func (c *Config) CalendarsEnding(now time.Time) []CalendarEnd {
	var out []CalendarEnd
	d := c.Day.DateOf(now)
	today := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)
	for _, cal := range c.CalendarsInUse() {
		n, ok := cal.DaysLeft(today)
		if !ok || n > c.CalendarWarnDays {
			continue
		}
		var desks []string
		for name, dk := range c.Desks {
			uses := c.CalendarOf(dk.Calendar) == cal
			for _, sc := range dk.Schedules {
				uses = uses || c.CalendarOf(sc.Calendar) == cal
			}
			if uses {
				desks = append(desks, name)
			}
		}
		slices.Sort(desks)
		out = append(out, CalendarEnd{Calendar: cal, DaysLeft: n, Desks: desks})
	}
	return out
}

// CalendarOf returns the calendar of name (case-insensitive), or nil.
func (c *Config) CalendarOf(name string) *triggers.Calendar {
	if name == "" {
		return nil
	}
	return c.Calendars[strings.ToUpper(name)]
}

// Entries returns the desk's schedules as the scheduler takes them.
func (c *Config) Entries(d *Desk) []triggers.Entry {
	var out []triggers.Entry
	for _, s := range d.Schedules {
		out = append(out, triggers.Entry{Name: s.Name, Spec: s.Spec, Text: s.Text, Calendar: c.CalendarOf(s.Calendar), On: s.On, RunWithin: s.RunWithin, Beyond: d.BeyondCalendar})
	}
	return out
}
