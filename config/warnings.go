package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deskd/deskd/router"
)

// Warning is something in a valid config that is likely a mistake: deskd
// runs it, and check-config says so.
type Warning struct {
	// File is the path of the file the warning is about.
	File string
	// Reason says what is likely wrong, and what to do.
	Reason string
}

// String formats the warning as "<file>: <reason>".
func (w Warning) String() string { return w.File + ": " + w.Reason }

// warnSample is how long after now Warnings looks at the schedules'
// slots: a week, so that a schedule of trading days or market hours
// meets at least one day it fires on.
const warnSample = 7 * 24 * time.Hour

// maxWarnSlots bounds the slots counted of one schedule (a week of
// minutes is 10,080).
const maxWarnSlots = 20000

// Warnings returns what in cfg is valid but likely costly: a desk on a
// real (not scripted) model with no budget (turn_tokens, session_tokens,
// day_tokens or day_cost) whose schedules fire more than once in some
// hour of the week from now, counted in the trading time zone with the
// schedules' calendars. Desks come in name order; then each calendar in
// use that ends within calendar_warn_days (CalendarsEnding).
func Warnings(cfg *Config, now time.Time) []Warning {
	var out []Warning
	names := make([]string, 0, len(cfg.Desks))
	for name := range cfg.Desks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d := cfg.Desks[name]
		m, ok := cfg.Models[d.Model]
		if !ok || m.Provider == router.ScriptedProvider || d.Budgets.Limited() {
			continue
		}
		if n, hour := busiestHour(cfg, d, now); n > 1 {
			out = append(out, Warning{File: d.Path, Reason: fmt.Sprintf(
				"desk %s runs the real model %s (%s) with no budget, and its schedules fire %d times in the hour from %s: "+
					"set budgets (day_tokens, day_cost) or fire less often", name, d.Model, m.Provider, n,
				hour.Format("2006-01-02 15:04 MST"))})
		}
	}
	for _, e := range cfg.CalendarsEnding(now) {
		out = append(out, Warning{File: cfg.Path, Reason: calendarEndReason(e)})
	}
	return out
}

// calendarEndReason says when a calendar in use ends, who follows it, and
// what to do.
func calendarEndReason(e CalendarEnd) string {
	c, n := e.Calendar, e.DaysLeft
	when := fmt.Sprintf("ends %s, in %d days", c.Through, n)
	switch {
	case n == 1:
		when = fmt.Sprintf("ends %s, tomorrow", c.Through)
	case n == 0:
		when = fmt.Sprintf("ends today, %s", c.Through)
	case n < 0:
		when = fmt.Sprintf("ended %s, %d days ago: past it, beyond_calendar decides (hold, the default: trading_days and market_hours slots are held)", c.Through, -n)
	}
	return fmt.Sprintf("calendar %s (desks %s) %s; add the exchange's published dates in %s.yaml of calendars_dir with extends: %s and a later through",
		c.Name, strings.Join(e.Desks, ", "), when, c.Name, c.Name)
}

// busiestHour returns the most slots d's schedules fire in one clock hour
// of the sample from now, in cfg's time zone, and that hour.
func busiestHour(cfg *Config, d *Desk, now time.Time) (int, time.Time) {
	loc := cfg.Location
	if loc == nil {
		loc = time.UTC
	}
	end := now.Add(warnSample)
	perHour := map[time.Time]int{}
	for _, e := range cfg.Entries(d) {
		if e.Spec == nil {
			continue
		}
		n := 0
		for slot := e.Next(now); !slot.IsZero() && slot.Before(end) && n < maxWarnSlots; slot = e.Next(slot) {
			if _, held := e.Held(slot); held {
				break // past its calendar's end, held: it fires nothing (and the calendar's own warning says so)
			}
			n++
			t := slot.In(loc)
			perHour[time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)]++
		}
	}
	best, at := 0, time.Time{}
	for h, n := range perHour {
		if n > best || (n == best && h.Before(at)) {
			best, at = n, h
		}
	}
	return best, at
}
