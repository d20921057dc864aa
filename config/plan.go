package config

import (
	"github.com/deskd/deskd/keeper"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Reload is what putting a newly loaded config in force in a running
// daemon does: the plan Plan makes and the daemon applies.
type Reload struct {
	// Next is the config as it will run: the one loaded, with the settings
	// a running deskd does not re-apply (state_dir, listen, the tokens,
	// debug_listen, timezone, rollover_at, log.format, shutdown_timeout)
	// kept at their
	// running values.
	Next *Config
	// Changes is every difference from the running config to the one
	// loaded (Diff): what config.reloaded and GET /v1/config/diff report.
	Changes []Change
	// Pinned are the daemon-wide changes that take effect only after a
	// restart of deskd (the Changes marked Restart); Next keeps the running
	// values of their fields.
	Pinned []Change
	// Start are the desks added, sorted.
	Start []string
	// Stop are the desks removed, sorted: each stops after its running
	// turn, and its files stay.
	Stop []string
	// Restart are the desks whose change a running desk cannot take: its
	// keeper's settings (rollover, curator on or off, the memory guard)
	// or, for rollover: trading_day, its calendar (another one, or the same
	// one edited). Each restarts alone, after its running turn. Sorted.
	Restart []string
	// Reconfigure are the other desks that take new settings between
	// turns: their own file changed, a model of their route (before or
	// after the change) changed, or any calendar (or calendar_warn_days)
	// changed. Sorted.
	Reconfigure []string
	// LogLevel is Next's log.level when it differs from the running one,
	// and empty when it does not: the level changes at once.
	LogLevel string
	// Rewatch is true when the folders to watch for edits moved
	// (desks_dir, calendars_dir).
	Rewatch bool
}

// Plan compares the running config cur with next, as loaded and
// validated, and returns what a reload does. It decides from the two
// configs alone and changes neither. A nil cur is a daemon with no desks
// and nothing to keep: every desk of next starts. next must not be nil.
func Plan(cur, next *Config) Reload {
	r := Reload{Changes: Diff(cur, next)}
	for _, c := range r.Changes {
		if c.Desk == "" && c.Restart {
			r.Pinned = append(r.Pinned, c)
		}
	}
	if cur == nil {
		r.Next = next
		r.Start = slices.Sorted(maps.Keys(next.Desks))
		return r
	}
	run := *next
	for _, p := range pinned {
		p.keep(&run, cur)
	}
	r.Next = &run
	if cur.Log.Level != next.Log.Level {
		r.LogLevel = next.Log.Level
	}
	r.Rewatch = cur.DesksDir != next.DesksDir || cur.CalendarsDir != next.CalendarsDir

	// A calendar, or how near its end the desks' status says it is ending.
	calendarsChanged := !equal(cur.Calendars, next.Calendars) || cur.CalendarWarnDays != next.CalendarWarnDays
	for _, name := range slices.Sorted(maps.Keys(cur.Desks)) {
		od, nd := cur.Desks[name], next.Desks[name]
		if od == nil {
			continue // not a desk: Start below sees it as absent
		}
		if nd == nil {
			r.Stop = append(r.Stop, name)
			continue
		}
		switch {
		case mustRestart(cur, next, od, nd):
			r.Restart = append(r.Restart, name)
		case len(diffDesk(od, nd)) > 0 || calendarsChanged || routeChanged(cur, next, od, nd):
			r.Reconfigure = append(r.Reconfigure, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next.Desks)) {
		if cur.Desks[name] == nil {
			r.Start = append(r.Start, name)
		}
	}
	return r
}

// mustRestart reports whether a running desk must restart to take nd:
// the keeper's settings (rollover, curator on or off, the memory guard)
// are fixed for the life of the desk's loop, and so is the calendar a
// trading_day rollover follows.
func mustRestart(cur, next *Config, od, nd *Desk) bool {
	if od.Rollover != nd.Rollover || od.Curator.Enabled != nd.Curator.Enabled || od.Memory != nd.Memory {
		return true
	}
	if nd.Rollover != keeper.RolloverTradingDay {
		return false
	}
	return !strings.EqualFold(od.Calendar, nd.Calendar) || !equal(cur.CalendarOf(nd.Calendar), next.CalendarOf(nd.Calendar))
}

// routeChanged reports whether a model of the desk's route, before or
// after the change, was added, removed or changed.
func routeChanged(cur, next *Config, od, nd *Desk) bool {
	route := append(append([]string{od.Model, nd.Model}, od.Fallbacks...), nd.Fallbacks...)
	for _, name := range route {
		a, inCur := cur.Models[name]
		b, inNext := next.Models[name]
		if inCur != inNext || !equal(a, b) {
			return true
		}
	}
	return false
}

// equal compares two config values as Diff does (see same).
func equal[V any](a, b V) bool { return same(reflect.ValueOf(a), reflect.ValueOf(b)) }
