package triggers_test

import (
	"context"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/triggers"
)

// endingCalendar is NSE-like, Mon-Fri 09:15-15:30 IST, covering 2026 only,
// with Christmas (Friday 2026-12-25) its last holiday.
func endingCalendar() *triggers.Calendar {
	c := &triggers.Calendar{
		Name: "NSE", Location: ist, Weekdays: [7]bool{time.Monday: true, time.Tuesday: true, time.Wednesday: true, time.Thursday: true, time.Friday: true},
		Sessions: []triggers.Session{{Open: 9*time.Hour + 15*time.Minute, Close: 15*time.Hour + 30*time.Minute}},
		Holidays: map[string]string{"2026-12-25": "Christmas"}, Special: map[string]triggers.SpecialDay{},
		Through: "2026-12-31",
	}
	if err := c.Check(); err != nil {
		panic(err)
	}
	return c
}

// TestCalendarKnowsItsEnd: a calendar covers the dates up to its through,
// in its own zone; it counts the days left to it; past it the market is
// unknown under hold, assumed under weekdays, and never plain open.
func TestCalendarKnowsItsEnd(t *testing.T) {
	c := endingCalendar()
	for _, tt := range []struct {
		name    string
		at      time.Time
		covers  bool
		hold    triggers.MarketState
		weekday triggers.MarketState
	}{
		{"the last date, open", istAt(2026, 12, 31, 10, 0), true, triggers.MarketOpen, triggers.MarketOpen},
		{"the last date, closed", istAt(2026, 12, 31, 23, 59), true, triggers.MarketClosed, triggers.MarketClosed},
		{"a holiday before the end", istAt(2026, 12, 25, 10, 0), true, triggers.MarketClosed, triggers.MarketClosed},
		// 2026-12-31 18:30Z is midnight in IST: the calendar's zone decides.
		{"IST midnight = 18:30Z", time.Date(2026, 12, 31, 18, 30, 0, 0, time.UTC), false, triggers.MarketUnknown, triggers.MarketAssumedClosed},
		{"1s before IST midnight", time.Date(2026, 12, 31, 18, 29, 59, 0, time.UTC), true, triggers.MarketClosed, triggers.MarketClosed},
		{"Republic Day 2027, in hours", istAt(2027, 1, 26, 10, 0), false, triggers.MarketUnknown, triggers.MarketAssumedOpen},
		{"a Saturday past the end", istAt(2027, 1, 2, 10, 0), false, triggers.MarketUnknown, triggers.MarketAssumedClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Covers(tt.at); got != tt.covers {
				t.Errorf("Covers(%v) = %v, want %v", tt.at, got, tt.covers)
			}
			if got := c.MarketAt(tt.at, triggers.BeyondHold); got != tt.hold {
				t.Errorf("MarketAt(%v, hold) = %q, want %q", tt.at, got, tt.hold)
			}
			if got := c.MarketAt(tt.at, ""); got != tt.hold {
				t.Errorf("MarketAt(%v, the zero Beyond) = %q, want hold's %q", tt.at, got, tt.hold)
			}
			if got := c.MarketAt(tt.at, triggers.BeyondWeekdays); got != tt.weekday {
				t.Errorf("MarketAt(%v, weekdays) = %q, want %q", tt.at, got, tt.weekday)
			}
		})
	}
	for _, tt := range []struct {
		date time.Time
		want int
	}{
		{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 30},
		{time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(2027, 1, 26, 0, 0, 0, 0, time.UTC), -26},
		{time.Date(2026, 3, 29, 0, 0, 0, 0, ist), 277}, // the clock and zone of the date do not count
	} {
		if got, ok := c.DaysLeft(tt.date); !ok || got != tt.want {
			t.Errorf("DaysLeft(%s) = %d, %v; want %d", tt.date.Format(time.DateOnly), got, ok, tt.want)
		}
	}
	if got := c.Ends(); got != "calendar NSE ends 2026-12-31" {
		t.Errorf("Ends() = %q", got)
	}
	if _, ok := (&triggers.Calendar{Name: "X", Location: ist}).DaysLeft(istAt(2026, 1, 1, 0, 0)); ok {
		t.Error("a calendar with no through has days left")
	}
}

// TestCalendarCheckThrough: a through that is no date, or a holiday or
// special session after it, is a problem naming the calendar.
func TestCalendarCheckThrough(t *testing.T) {
	c := endingCalendar()
	c.Through = "2026-13-01"
	if err := c.Check(); err == nil {
		t.Error("Check accepted through 2026-13-01")
	}
	c = endingCalendar()
	c.Holidays["2027-01-26"] = "Republic Day"
	if err := c.Check(); err == nil {
		t.Error("Check accepted a holiday after through")
	}
}

// heldHarness runs a Scheduler over entries from start, reporting what it
// fires, records missed and announces held.
type heldHarness struct {
	clk                 *clock.Fake
	fired, missed, held chan string
	sched               *triggers.Scheduler
}

func runHeld(t *testing.T, start time.Time, entries []triggers.Entry) *heldHarness {
	t.Helper()
	h := &heldHarness{clk: clock.NewFake(start), fired: make(chan string, 100), missed: make(chan string, 100), held: make(chan string, 100)}
	stamp := func(e triggers.Entry, slot time.Time) string {
		return e.Name + "@" + slot.In(ist).Format("2006-01-02 15:04")
	}
	h.sched = &triggers.Scheduler{
		Desk: "main", Clock: h.clk, Entries: entries,
		Fire:   func(e triggers.Entry, slot time.Time, _ triggers.Trigger) { h.fired <- stamp(e, slot) },
		Missed: func(e triggers.Entry, slot time.Time, reason string) { h.missed <- stamp(e, slot) + ": " + reason },
		Held:   func(e triggers.Entry, slot time.Time, reason string) { h.held <- stamp(e, slot) + ": " + reason },
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); h.sched.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// to waits for the scheduler's timer to be armed at when (the slot it
// waits for next), then sets the clock to it.
func (h *heldHarness) to(t *testing.T, when time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.clk.WaitTimerAt(ctx, when); err != nil {
		t.Fatalf("the scheduler armed no timer for %v: %v", when, err)
	}
	h.clk.Set(when)
}

// firesAt moves the clock to when (see to) and wants slot fired there.
func (h *heldHarness) firesAt(t *testing.T, when time.Time, slot string) {
	t.Helper()
	h.to(t, when)
	expect(t, h.fired, "fired", slot)
}

// holdsAt moves the clock to when (see to) and wants slot (with its
// reason) recorded missed and announced held there.
func (h *heldHarness) holdsAt(t *testing.T, when time.Time, slot string) {
	t.Helper()
	h.to(t, when)
	expect(t, h.missed, "missed", slot)
	expect(t, h.held, "held", slot)
}

// TestSchedulerHoldsSlotsPastCalendarEnd: under beyond_calendar: hold
// (the zero Beyond), a trading_days or market_hours slot past the end of
// its calendar is recorded missed with the reason naming the calendar's
// end, announced as held, and never fired; an every_day schedule goes on;
// the status's next slot skips what will not fire.
func TestSchedulerHoldsSlotsPastCalendarEnd(t *testing.T) {
	cal := endingCalendar()
	entries := []triggers.Entry{
		{Name: "tape", Spec: spec(t, "0 10 * * *"), Calendar: cal, On: triggers.MarketHours},
		{Name: "open", Spec: spec(t, "15 9 * * *"), Calendar: cal, On: triggers.TradingDays, Beyond: triggers.BeyondHold},
		{Name: "daily", Spec: spec(t, "0 20 * * *"), Calendar: cal, On: triggers.EveryDay},
	}
	h := runHeld(t, istAt(2026, 12, 31, 9, 0), entries)
	h.firesAt(t, istAt(2026, 12, 31, 9, 15), "open@2026-12-31 09:15")
	h.firesAt(t, istAt(2026, 12, 31, 10, 0), "tape@2026-12-31 10:00")
	h.firesAt(t, istAt(2026, 12, 31, 20, 0), "daily@2026-12-31 20:00")

	// Friday 1 January 2027, a weekday past the end: held.
	if name, at, ok := h.sched.Next(istAt(2026, 12, 31, 20, 0)); !ok || name != "daily" || !at.Equal(istAt(2027, 1, 1, 20, 0)) {
		t.Errorf("Next = %s %v %v, want daily at 2027-01-01 20:00 (the held slots will not fire)", name, at, ok)
	}
	h.holdsAt(t, istAt(2027, 1, 1, 9, 15), "open@2027-01-01 09:15: calendar NSE ends 2026-12-31")
	h.holdsAt(t, istAt(2027, 1, 1, 10, 0), "tape@2027-01-01 10:00: calendar NSE ends 2026-12-31")
	h.firesAt(t, istAt(2027, 1, 1, 20, 0), "daily@2027-01-01 20:00")
	// The weekend is no trading day under the calendar's weekdays: the
	// next held slots are Monday's.
	h.firesAt(t, istAt(2027, 1, 2, 20, 0), "daily@2027-01-02 20:00")
	h.firesAt(t, istAt(2027, 1, 3, 20, 0), "daily@2027-01-03 20:00")
	h.to(t, istAt(2027, 1, 4, 9, 15))
	expect(t, h.held, "held", "open@2027-01-04 09:15: calendar NSE ends 2026-12-31")
	expectNone(t, h.fired, "fired")
}

// TestSchedulerWeekdaysPastCalendarEnd: under beyond_calendar: weekdays,
// the slots past the end fire on the calendar's weekdays and sessions (no
// holiday is known there: Republic Day 2027 fires), and none is held.
func TestSchedulerWeekdaysPastCalendarEnd(t *testing.T) {
	cal := endingCalendar()
	entries := []triggers.Entry{
		{Name: "tape", Spec: spec(t, "0 10 * * *"), Calendar: cal, On: triggers.MarketHours, Beyond: triggers.BeyondWeekdays},
	}
	h := runHeld(t, istAt(2027, 1, 22, 9, 0), entries) // Friday
	h.firesAt(t, istAt(2027, 1, 22, 10, 0), "tape@2027-01-22 10:00")
	h.firesAt(t, istAt(2027, 1, 25, 10, 0), "tape@2027-01-25 10:00") // Monday: the weekend skipped
	h.firesAt(t, istAt(2027, 1, 26, 10, 0), "tape@2027-01-26 10:00")
	if name, _, ok := h.sched.Next(istAt(2027, 1, 26, 10, 0)); !ok || name != "tape" {
		t.Errorf("Next = %s, %v; want tape's next slot", name, ok)
	}
	expectNone(t, h.held, "held")
	expectNone(t, h.missed, "missed")
}

// TestSchedulerHoldsAtStart: a slot past the end that passed while deskd
// was down is recorded with the calendar's reason, not run, at start.
func TestSchedulerHoldsAtStart(t *testing.T) {
	cal := endingCalendar()
	e := triggers.Entry{Name: "tape", Spec: spec(t, "0 10 * * *"), Calendar: cal, On: triggers.MarketHours, RunWithin: time.Hour}
	h := &heldHarness{clk: clock.NewFake(istAt(2027, 1, 4, 10, 5)), fired: make(chan string, 10), missed: make(chan string, 10), held: make(chan string, 10)}
	s := &triggers.Scheduler{
		Desk: "main", Clock: h.clk, Entries: []triggers.Entry{e},
		Last: func(string) (time.Time, bool) { return istAt(2026, 12, 31, 10, 0), true },
		Fire: func(e triggers.Entry, slot time.Time, _ triggers.Trigger) {
			h.fired <- slot.In(ist).Format(time.DateTime)
		},
		Missed: func(e triggers.Entry, slot time.Time, reason string) {
			h.missed <- slot.In(ist).Format(time.DateTime) + ": " + reason
		},
		Held: func(e triggers.Entry, slot time.Time, reason string) { h.held <- slot.In(ist).Format(time.DateTime) },
		MissedRun: func(e triggers.Entry, n int, first, last time.Time, reason string) {
			t.Errorf("MissedRun(%d, %v, %v, %q): held slots are announced by Held", n, first, last, reason)
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	expect(t, h.missed, "missed", "2027-01-01 10:00:00: calendar NSE ends 2026-12-31", "2027-01-04 10:00:00: calendar NSE ends 2026-12-31")
	expect(t, h.held, "held", "2027-01-01 10:00:00", "2027-01-04 10:00:00")
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := h.clk.WaitTimerAt(wctx, istAt(2027, 1, 5, 10, 0)); err != nil { // settled: it waits for the next slot
		t.Fatal(err)
	}
	expectNone(t, h.fired, "fired")
}
