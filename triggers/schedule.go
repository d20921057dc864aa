package triggers

import (
	"context"
	"fmt"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// On says on which days, or at which hours, a schedule with a calendar
// fires (a schedule's on).
type On string

// The values of On.
const (
	// EveryDay fires every slot of the cron expression (the default; the
	// zero On does too).
	EveryDay On = "every_day"
	// TradingDays fires only on the calendar's trading days.
	TradingDays On = "trading_days"
	// MarketHours fires only while the market is open.
	MarketHours On = "market_hours"
)

// DefaultRunWithin is how late a slot missed while deskd was down may still
// run, when a schedule says nothing (missed: {run_within}).
const DefaultRunWithin = 5 * time.Minute

// DefaultGrace is how late a slot may fire while deskd runs (a timer that
// woke late, a slow disk) before it counts as missed.
const DefaultGrace = time.Minute

// Entry is one of a desk's schedules.
type Entry struct {
	Name string
	Spec *Spec
	Text string
	// Calendar, if set, filters the slots by On.
	Calendar *Calendar
	On       On
	// Beyond is what the schedule does past the end of its calendar
	// (beyond_calendar; the zero Beyond is BeyondHold): a held slot is
	// reported to the Scheduler's Missed and Held, never fired.
	Beyond Beyond
	// RunWithin is the missed-run policy: a slot that passed while deskd
	// was down still runs if it is at most this late (only the latest such
	// slot); 0 means skip every missed slot.
	RunWithin time.Duration
}

// Next returns the first slot of e strictly after t, or the zero time if
// there is none in reach.
func (e Entry) Next(t time.Time) time.Time {
	for range 5000 {
		s := e.Spec.Next(t)
		if s.IsZero() || e.Calendar == nil {
			return s
		}
		switch e.On {
		case TradingDays:
			if e.Calendar.TradingDay(s) {
				return s
			}
			next, ok := e.Calendar.NextTradingDay(s)
			if !ok {
				return time.Time{}
			}
			t = next.Add(-time.Nanosecond)
		case MarketHours:
			if e.Calendar.Open(s) {
				return s
			}
			next, ok := e.Calendar.NextOpen(s)
			if !ok {
				return time.Time{}
			}
			if next.Equal(s) { // cannot happen: s is not open
				return time.Time{}
			}
			t = next.Add(-time.Nanosecond)
		default:
			return s
		}
	}
	return time.Time{}
}

// Held reports whether slot is held rather than fired: a slot of a
// trading_days or market_hours schedule past the end of its calendar,
// under beyond_calendar: hold. reason names the calendar and its end.
func (e Entry) Held(slot time.Time) (reason string, held bool) {
	if e.Calendar == nil || e.Calendar.Covers(slot) || e.Beyond == BeyondWeekdays {
		return "", false
	}
	if e.On != TradingDays && e.On != MarketHours {
		return "", false
	}
	return e.Calendar.Ends(), true
}

// SlotID is the trigger id of a schedule's slot, and its claim in the ledger.
func SlotID(name string, slot time.Time) string {
	return name + "@" + slot.UTC().Format(time.RFC3339)
}

// ArmID is the ledger id of the record that arms schedule name.
func ArmID(name string) string { return name + "@armed" }

// Scheduler fires a desk's schedules on deskd's clock. It uses robfig/cron
// only to parse expressions and compute the next slot; it never runs cron's
// own runner, which reads the wall clock and forgets past slots.
//
// Slots are counted from the latest slot the desk's ledger holds for each
// schedule (Last), so a restart never fires a slot twice, even after the
// clock stepped back; the slots that passed while deskd was down are put
// to the schedule's missed policy, and each one that does not run is
// reported to Missed. A schedule the ledger knows nothing of starts now.
type Scheduler struct {
	// Desk is the desk the triggers are for.
	Desk string
	// Clock is deskd's clock.
	Clock clock.Clock
	// From, if set, is the instant the schedules took effect (the desk's
	// start, a reload): a schedule Last knows nothing of counts its slots
	// from there, not from when Run begins, so that a slot that comes
	// between the two still fires.
	From time.Time
	// Entries are the schedules.
	Entries []Entry
	// Last returns the latest slot of a schedule that was claimed or
	// reported before; ok is false when there is none. May be nil.
	Last func(name string) (time.Time, bool)
	// Arm is told of each schedule Last knows nothing of, with the instant
	// its slots are counted from; it records that durably, so that a
	// restart reports the slots missed before the first one fired. May be nil.
	Arm func(e Entry, from time.Time)
	// Fire claims one slot: it must record it durably before queueing it.
	Fire func(e Entry, slot time.Time, t Trigger)
	// Missed is told of each slot that will not run, and why.
	Missed func(e Entry, slot time.Time, reason string)
	// Planned, if set, is told of the next slot the scheduler waits for
	// and its schedule's name, each time it computes it. May be nil.
	Planned func(name string, at time.Time)
	// MissedRun, if set, is told once per schedule of the slots found
	// missed at once (a start after downtime, a clock that jumped): how
	// many, the first and the last, and the last one's reason; after the
	// calls to Missed of each of them. May be nil.
	MissedRun func(e Entry, count int, first, last time.Time, reason string)
	// Held, if set, is told of each slot held past the end of its
	// schedule's calendar (Entry.Held), after Missed was. May be nil.
	Held func(e Entry, slot time.Time, reason string)
	// Grace is how late a slot may fire while the scheduler runs (default
	// DefaultGrace); a schedule's RunWithin, if longer, wins.
	Grace time.Duration
}

// maxReported is how many missed slots of one schedule are reported one by
// one at a time; earlier ones are counted in the first report's reason.
const maxReported = 100

// Next returns the earliest upcoming slot after now that will fire and its
// schedule's name; ok is false when there is none (no schedules, or every
// next slot is held past the end of its calendar).
func (s *Scheduler) Next(now time.Time) (name string, at time.Time, ok bool) {
	for _, e := range s.Entries {
		n := e.Next(now)
		if _, held := e.Held(n); held {
			continue // and so is every later slot: a calendar's end stays put
		}
		if !n.IsZero() && (!ok || n.Before(at)) {
			name, at, ok = e.Name, n, true
		}
	}
	return name, at, ok
}

// Run fires slots until ctx is done. It first settles the slots that passed
// while deskd was down, then waits for each next slot.
func (s *Scheduler) Run(ctx context.Context) {
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	now := s.Clock.Now()
	from := now
	if !s.From.IsZero() && s.From.Before(now) {
		from = s.From
	}
	cursor := make([]time.Time, len(s.Entries))
	for i, e := range s.Entries {
		cursor[i] = from
		if s.Last == nil {
			continue
		}
		if last, ok := s.Last(e.Name); ok {
			cursor[i] = s.settle(e, last, now, e.RunWithin, true)
		} else if s.Arm != nil {
			s.Arm(e, from)
		}
	}
	for {
		var next time.Time
		var name string
		for i, e := range s.Entries {
			if n := e.Next(cursor[i]); !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next, name = n, e.Name
			}
		}
		if next.IsZero() {
			<-ctx.Done()
			return
		}
		if s.Planned != nil {
			s.Planned(name, next)
		}
		t := s.Clock.NewTimer(next.Sub(s.Clock.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		now := s.Clock.Now()
		for i, e := range s.Entries {
			cursor[i] = s.settle(e, cursor[i], now, max(e.RunWithin, grace), false)
		}
	}
}

// settle handles the slots of e in (after, now]: the latest fires if it is
// at most window late, and every other one is reported missed. It returns
// the new cursor: the latest slot, or after when there was none.
func (s *Scheduler) settle(e Entry, after, now time.Time, window time.Duration, startup bool) time.Time {
	if floor := now.AddDate(0, 0, -400); after.Before(floor) {
		after = floor // down for more than a year: look back no further
	}
	var recent []time.Time // the latest maxReported+1 slots
	var first time.Time
	total := 0
	for slot := e.Next(after); !slot.IsZero() && !slot.After(now); slot = e.Next(slot) {
		if total == 0 {
			first = slot
		}
		total++
		recent = append(recent, slot)
		if len(recent) > maxReported+1 {
			recent = recent[1:]
		}
	}
	if total == 0 {
		return after
	}
	latest := recent[len(recent)-1]
	_, latestHeld := e.Held(latest)
	fire := now.Sub(latest) <= window && !latestHeld
	missed := recent[:len(recent)-1]
	if !fire {
		missed = recent
	}
	if len(missed) > maxReported {
		missed = missed[len(missed)-maxReported:]
	}
	earlier := total - len(missed)
	if fire {
		earlier--
	}
	var held []time.Time // past the calendar's end: announced by Held, not MissedRun
	unheld := missed[:0:0]
	for i, slot := range missed {
		reason, isHeld := e.Held(slot)
		if !isHeld {
			reason = missReason(e, slot, latest, now, fire, startup)
			unheld = append(unheld, slot)
		} else {
			held = append(held, slot)
		}
		if i == 0 && earlier > 0 {
			reason += fmt.Sprintf(" (%d earlier slots of this schedule were missed as well and are not listed one by one)", earlier)
		}
		if s.Missed != nil {
			s.Missed(e, slot, reason)
		}
	}
	if n := len(unheld); n > 0 && s.MissedRun != nil {
		last, from, count := unheld[n-1], unheld[0], n
		if from.Equal(missed[0]) { // the earlier slots, not listed, came before it
			from, count = first, n+earlier
		}
		s.MissedRun(e, count, from, last, missReason(e, last, latest, now, fire, startup))
	}
	if s.Held != nil {
		for _, slot := range held {
			reason, _ := e.Held(slot)
			s.Held(e, slot, reason)
		}
	}
	if fire {
		s.Fire(e, latest, Trigger{
			ID: SlotID(e.Name, latest), Desk: s.Desk, Kind: Schedule, Text: e.Text, At: now, Source: "schedule:" + e.Name,
		})
	}
	return latest
}

func missReason(e Entry, slot, latest, now time.Time, fired, startup bool) string {
	switch {
	case startup && e.RunWithin == 0:
		return "deskd was not running at the slot, and the schedule's missed policy is skip"
	case startup && slot.Equal(latest) && !fired:
		return fmt.Sprintf("deskd was not running at the slot, and it is %s late, more than run_within (%s)",
			now.Sub(slot).Round(time.Second), e.RunWithin)
	case startup:
		return "deskd was not running at the slot; only the latest missed slot of a schedule may run"
	case slot.Equal(latest) && !fired:
		return fmt.Sprintf("the slot came due %s late, more than the schedule allows", now.Sub(slot).Round(time.Second))
	default:
		return "the clock passed several slots at once; only the latest ran"
	}
}

// Claimed is a schedule whose latest claimed slot is later than deskd's
// clock: it fires nothing until its next slot after Last.
type Claimed struct {
	// Schedule is the schedule's name.
	Schedule string
	// Last is the latest slot claimed (Scheduler.Last).
	Last time.Time
}

// AheadOf returns the schedules whose latest claimed slot (Last) is after
// now, in the order of Entries: deskd's clock is behind slots that fired
// already (--clock-start before them, a clock stepped back), so they fire
// nothing until their next slot after that one.
func (s *Scheduler) AheadOf(now time.Time) []Claimed {
	if s == nil || s.Last == nil {
		return nil
	}
	var out []Claimed
	for _, e := range s.Entries {
		if last, ok := s.Last(e.Name); ok && last.After(now) {
			out = append(out, Claimed{Schedule: e.Name, Last: last})
		}
	}
	return out
}
