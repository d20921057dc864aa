package triggers

import (
	"fmt"
	"slices"
	"time"
)

// Calendar is an exchange's trading calendar: its time zone, the weekdays
// it trades, its regular sessions, its holidays, and special sessions
// (Muhurat trading, a half day) that replace the regular ones on a date.
// Config builds calendars from YAML files; deskd ships NSE.
type Calendar struct {
	// Name is the calendar's name, such as "NSE".
	Name string
	// Location is the exchange's time zone.
	Location *time.Location
	// Weekdays are the days of the week the exchange trades.
	Weekdays [7]bool
	// Sessions are a trading day's regular sessions, in order.
	Sessions []Session
	// Holidays are the dates, as YYYY-MM-DD, with no regular session, and
	// their names.
	Holidays map[string]string
	// Special are dates (YYYY-MM-DD) whose sessions replace the regular
	// ones, holiday, weekend or not.
	Special map[string]SpecialDay
	// Through is the last date (YYYY-MM-DD, in the calendar's zone) the
	// calendar covers: its holidays are known up to it and no further.
	// Past it, the answers of SessionsOn, TradingDay, Open, NextOpen and
	// NextTradingDay are assumed from the weekdays and sessions alone;
	// every consumer asks Covers first and applies its Beyond policy.
	// Config requires it of every calendar file; empty means no end (a
	// calendar built in code).
	Through string
}

// Beyond is what a desk does past the end of a calendar (beyond_calendar).
type Beyond string

// The values of Beyond.
const (
	// BeyondHold (the default) holds every trading_days and market_hours
	// slot past the end: recorded missed, announced, never fired; the
	// market is unknown.
	BeyondHold Beyond = "hold"
	// BeyondWeekdays assumes the calendar's weekdays and sessions past the
	// end, with no holidays: slots fire, the market is assumed.
	BeyondWeekdays Beyond = "weekdays"
)

// MarketState is what a calendar says of the market at an instant, for a
// desk's status.
type MarketState string

// The values of MarketState.
const (
	// MarketOpen and MarketClosed: the calendar covers the date, and
	// knows.
	MarketOpen   MarketState = "open"
	MarketClosed MarketState = "closed"
	// MarketUnknown: past the calendar's end, under beyond_calendar: hold.
	MarketUnknown MarketState = "unknown"
	// MarketAssumedOpen and MarketAssumedClosed: past the calendar's end,
	// under beyond_calendar: weekdays, from its weekdays and sessions.
	MarketAssumedOpen   MarketState = "assumed_open"
	MarketAssumedClosed MarketState = "assumed_closed"
)

// Covers reports whether the date t falls on, in the calendar's zone, is
// at or before Through.
func (c *Calendar) Covers(t time.Time) bool {
	return c.Through == "" || c.dateKey(t) <= c.Through
}

// DaysLeft returns the days from date (a civil date; its clock and zone
// are ignored) to Through: 0 on the last date covered, negative past it.
// ok is false for a calendar with no end.
func (c *Calendar) DaysLeft(date time.Time) (days int, ok bool) {
	end, err := time.Parse(time.DateOnly, c.Through)
	if err != nil {
		return 0, false
	}
	y, m, d := date.Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return int(end.Sub(from).Round(24*time.Hour) / (24 * time.Hour)), true
}

// Ends is the reason a slot past the end is held, naming the calendar
// and its end: "calendar NSE ends 2026-12-31".
func (c *Calendar) Ends() string { return fmt.Sprintf("calendar %s ends %s", c.Name, c.Through) }

// MarketAt returns the market's state at t under policy b: open or closed
// while the calendar covers t's date; past its end, unknown (hold, the
// default) or assumed from the weekdays and sessions (weekdays).
func (c *Calendar) MarketAt(t time.Time, b Beyond) MarketState {
	open := c.Open(t)
	switch {
	case c.Covers(t) && open:
		return MarketOpen
	case c.Covers(t):
		return MarketClosed
	case b != BeyondWeekdays:
		return MarketUnknown
	case open:
		return MarketAssumedOpen
	}
	return MarketAssumedClosed
}

// Session is one trading session: Open to Close, as times of day in the
// calendar's time zone. Close is exclusive.
type Session struct {
	Open, Close time.Duration
}

// SpecialDay is a date with its own sessions.
type SpecialDay struct {
	Name     string
	Sessions []Session
}

// Check reports what is wrong with c.
func (c *Calendar) Check() error {
	if c.Location == nil {
		return fmt.Errorf("calendar %s: no time zone", c.Name)
	}
	check := func(ss []Session) error {
		for i, s := range ss {
			if s.Open < 0 || s.Close > 24*time.Hour || s.Open >= s.Close {
				return fmt.Errorf("session %d: open %s must come before close %s, within the day", i, clockOf(s.Open), clockOf(s.Close))
			}
			if i > 0 && s.Open < ss[i-1].Close {
				return fmt.Errorf("session %d overlaps the one before", i)
			}
		}
		return nil
	}
	if len(c.Sessions) == 0 {
		return fmt.Errorf("calendar %s: no sessions", c.Name)
	}
	if err := check(c.Sessions); err != nil {
		return fmt.Errorf("calendar %s: sessions: %w", c.Name, err)
	}
	if c.Through != "" {
		if t, err := time.Parse(time.DateOnly, c.Through); err != nil || t.Format(time.DateOnly) != c.Through {
			return fmt.Errorf("calendar %s: through %q is not a date: want YYYY-MM-DD", c.Name, c.Through)
		}
		for _, d := range c.Dates() {
			if d > c.Through {
				return fmt.Errorf("calendar %s: %s is after through (%s): move through to cover it", c.Name, d, c.Through)
			}
		}
	}
	for d, sd := range c.Special {
		if err := check(sd.Sessions); err != nil {
			return fmt.Errorf("calendar %s: special session on %s: %w", c.Name, d, err)
		}
	}
	return nil
}

// dateKey names the calendar date of t in the calendar's zone.
func (c *Calendar) dateKey(t time.Time) string { return t.In(c.Location).Format(time.DateOnly) }

// midnight returns the start of t's date in the calendar's zone.
func (c *Calendar) midnight(t time.Time) time.Time {
	y, m, d := t.In(c.Location).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, c.Location)
}

// SessionsOn returns the sessions of the calendar date that t falls on, in
// the calendar's zone: none on a holiday or a day the exchange does not
// trade, the special ones on a special date.
func (c *Calendar) SessionsOn(t time.Time) []Session {
	key := c.dateKey(t)
	if sd, ok := c.Special[key]; ok {
		return sd.Sessions
	}
	if _, ok := c.Holidays[key]; ok {
		return nil
	}
	if !c.Weekdays[t.In(c.Location).Weekday()] {
		return nil
	}
	return c.Sessions
}

// TradingDay reports whether the date t falls on, in the calendar's zone,
// has a session.
func (c *Calendar) TradingDay(t time.Time) bool { return len(c.SessionsOn(t)) > 0 }

// Holiday returns the name of the holiday on t's date, if it is one.
func (c *Calendar) Holiday(t time.Time) (string, bool) {
	name, ok := c.Holidays[c.dateKey(t)]
	if _, special := c.Special[c.dateKey(t)]; special {
		return "", false
	}
	return name, ok
}

// Open reports whether the market is open at t.
func (c *Calendar) Open(t time.Time) bool {
	day := c.midnight(t)
	for _, s := range c.SessionsOn(t) {
		if open, cl := at(day, s.Open), at(day, s.Close); !t.Before(open) && t.Before(cl) {
			return true
		}
	}
	return false
}

// NextOpen returns the first instant at or after t at which the market is
// open: t itself while it is open. ok is false when the calendar has no
// session in the next 800 days.
func (c *Calendar) NextOpen(t time.Time) (time.Time, bool) {
	day := c.midnight(t)
	for range 800 {
		for _, s := range c.SessionsOn(day.Add(12 * time.Hour)) {
			open, cl := at(day, s.Open), at(day, s.Close)
			if t.Before(cl) {
				if t.Before(open) {
					return open, true
				}
				return t, true
			}
		}
		y, m, d := day.Date()
		day = time.Date(y, m, d+1, 0, 0, 0, 0, c.Location)
	}
	return time.Time{}, false
}

// NextTradingDay returns the start (local midnight) of the first trading
// day strictly after t's date.
func (c *Calendar) NextTradingDay(t time.Time) (time.Time, bool) {
	day := c.midnight(t)
	for range 800 {
		y, m, d := day.Date()
		day = time.Date(y, m, d+1, 0, 0, 0, 0, c.Location)
		if c.TradingDay(day.Add(12 * time.Hour)) {
			return day, true
		}
	}
	return time.Time{}, false
}

// Dates returns the holiday and special dates the calendar knows, sorted;
// status and tests use it.
func (c *Calendar) Dates() []string {
	var out []string
	for d := range c.Holidays {
		out = append(out, d)
	}
	for d := range c.Special {
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// at returns the instant time-of-day off after local midnight day. Wall
// clock arithmetic, so that a DST change in the zone keeps "09:15" 09:15.
func at(day time.Time, off time.Duration) time.Time {
	y, m, d := day.Date()
	return time.Date(y, m, d, int(off/time.Hour), int(off%time.Hour/time.Minute), 0, 0, day.Location())
}

func clockOf(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
