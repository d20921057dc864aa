package triggers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/triggers"
)

var ist = mustLoad("Asia/Kolkata")

func mustLoad(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func spec(t *testing.T, expr string) *triggers.Spec {
	t.Helper()
	s, err := triggers.ParseSpec(expr, ist)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testCalendar is NSE-like: Mon-Fri 09:15-15:30 IST, a holiday on
// Tuesday 2026-03-03 (Holi), a special evening session on Sunday
// 2026-03-08, and a half day on Wednesday 2026-03-04.
func testCalendar() *triggers.Calendar {
	c := &triggers.Calendar{
		Name: "TEST", Location: ist,
		Sessions: []triggers.Session{{Open: 9*time.Hour + 15*time.Minute, Close: 15*time.Hour + 30*time.Minute}},
		Holidays: map[string]string{"2026-03-03": "Holi"},
		Special: map[string]triggers.SpecialDay{
			"2026-03-08": {Name: "Muhurat", Sessions: []triggers.Session{{Open: 18 * time.Hour, Close: 19 * time.Hour}}},
			"2026-03-04": {Name: "half day", Sessions: []triggers.Session{{Open: 9*time.Hour + 15*time.Minute, Close: 12 * time.Hour}}},
		},
	}
	for d := time.Monday; d <= time.Friday; d++ {
		c.Weekdays[d] = true
	}
	if err := c.Check(); err != nil {
		panic(err)
	}
	return c
}

func istAt(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, ist)
}

func TestCalendar(t *testing.T) {
	c := testCalendar()
	tests := []struct {
		name           string
		at             time.Time
		trading, open  bool
		nextOpen       time.Time
		nextTradingDay time.Time
	}{
		{"Monday before the open", istAt(2026, 3, 2, 9, 14), true, false, istAt(2026, 3, 2, 9, 15), istAt(2026, 3, 4, 0, 0)},
		{"Monday at the open", istAt(2026, 3, 2, 9, 15), true, true, istAt(2026, 3, 2, 9, 15), istAt(2026, 3, 4, 0, 0)},
		{"Monday at the close", istAt(2026, 3, 2, 15, 30), true, false, istAt(2026, 3, 4, 9, 15), istAt(2026, 3, 4, 0, 0)},
		{"the holiday", istAt(2026, 3, 3, 11, 0), false, false, istAt(2026, 3, 4, 9, 15), istAt(2026, 3, 4, 0, 0)},
		{"the half day after noon", istAt(2026, 3, 4, 12, 30), true, false, istAt(2026, 3, 5, 9, 15), istAt(2026, 3, 5, 0, 0)},
		{"Saturday", istAt(2026, 3, 7, 11, 0), false, false, istAt(2026, 3, 8, 18, 0), istAt(2026, 3, 8, 0, 0)},
		{"the special Sunday session", istAt(2026, 3, 8, 18, 30), true, true, istAt(2026, 3, 8, 18, 30), istAt(2026, 3, 9, 0, 0)},
		{"IST date, not UTC date", time.Date(2026, 3, 2, 19, 0, 0, 0, time.UTC), false, false, istAt(2026, 3, 4, 9, 15), istAt(2026, 3, 4, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.TradingDay(tt.at); got != tt.trading {
				t.Errorf("TradingDay(%v) = %v, want %v", tt.at, got, tt.trading)
			}
			if got := c.Open(tt.at); got != tt.open {
				t.Errorf("Open(%v) = %v, want %v", tt.at, got, tt.open)
			}
			if got, ok := c.NextOpen(tt.at); !ok || !got.Equal(tt.nextOpen) {
				t.Errorf("NextOpen(%v) = %v, %v; want %v", tt.at, got, ok, tt.nextOpen)
			}
			if got, ok := c.NextTradingDay(tt.at); !ok || !got.Equal(tt.nextTradingDay) {
				t.Errorf("NextTradingDay(%v) = %v, %v; want %v", tt.at, got, ok, tt.nextTradingDay)
			}
		})
	}
}

// TestEntryNext: trading_days skips weekends and holidays; market_hours
// keeps the slots while the market is open (close exclusive).
func TestEntryNext(t *testing.T) {
	c := testCalendar()
	slots := func(e triggers.Entry, from time.Time, n int) string {
		var out []string
		for s := e.Next(from); len(out) < n && !s.IsZero(); s = e.Next(s) {
			out = append(out, s.In(ist).Format("Mon 01-02 15:04"))
		}
		return strings.Join(out, ", ")
	}
	daily := triggers.Entry{Name: "brief", Spec: spec(t, "0 9 * * *"), Calendar: c, On: triggers.TradingDays}
	if got, want := slots(daily, istAt(2026, 3, 1, 12, 0), 5), "Mon 03-02 09:00, Wed 03-04 09:00, Thu 03-05 09:00, Fri 03-06 09:00, Sun 03-08 09:00"; got != want {
		t.Errorf("trading_days slots = %s\nwant %s", got, want)
	}
	every := triggers.Entry{Name: "tape", Spec: spec(t, "*/15 * * * *"), Calendar: c, On: triggers.MarketHours}
	if got, want := slots(every, istAt(2026, 3, 2, 15, 0), 5), "Mon 03-02 15:15, Wed 03-04 09:15, Wed 03-04 09:30, Wed 03-04 09:45, Wed 03-04 10:00"; got != want {
		t.Errorf("market_hours slots = %s\nwant %s", got, want)
	}
	if got, want := slots(every, istAt(2026, 3, 4, 11, 30), 3), "Wed 03-04 11:45, Thu 03-05 09:15, Thu 03-05 09:30"; got != want {
		t.Errorf("market_hours slots on the half day = %s\nwant %s", got, want)
	}
	if got, want := slots(every, istAt(2026, 3, 7, 0, 0), 5), "Sun 03-08 18:00, Sun 03-08 18:15, Sun 03-08 18:30, Sun 03-08 18:45, Mon 03-09 09:15"; got != want {
		t.Errorf("market_hours slots over the special session = %s\nwant %s", got, want)
	}
	plain := triggers.Entry{Name: "plain", Spec: spec(t, "0 9 * * *")}
	if got, want := slots(plain, istAt(2026, 3, 2, 12, 0), 2), "Tue 03-03 09:00, Wed 03-04 09:00"; got != want {
		t.Errorf("slots without a calendar = %s, want %s", got, want)
	}
}

// schedHarness runs a Scheduler on a fake clock and collects what it does.
type schedHarness struct {
	clk    *clock.Fake
	fired  chan string
	missed chan string
	armed  chan string
	cancel context.CancelFunc
	done   chan struct{}
}

func runScheduler(t *testing.T, start time.Time, entries []triggers.Entry, last map[string]time.Time) *schedHarness {
	t.Helper()
	h := &schedHarness{
		clk: clock.NewFake(start), fired: make(chan string, 1000), missed: make(chan string, 1000),
		armed: make(chan string, 10), done: make(chan struct{}),
	}
	s := &triggers.Scheduler{
		Desk: "main", Clock: h.clk, Entries: entries,
		Last: func(name string) (time.Time, bool) { v, ok := last[name]; return v, ok },
		Arm:  func(e triggers.Entry, from time.Time) { h.armed <- e.Name + "@" + from.In(ist).Format("15:04") },
		Fire: func(e triggers.Entry, slot time.Time, tr triggers.Trigger) {
			if tr.ID != triggers.SlotID(e.Name, slot) || tr.Kind != triggers.Schedule || tr.Text != e.Text {
				t.Errorf("fired trigger %+v for slot %v", tr, slot)
			}
			h.fired <- e.Name + "@" + slot.In(ist).Format("15:04")
		},
		Missed: func(e triggers.Entry, slot time.Time, reason string) {
			h.missed <- e.Name + "@" + slot.In(ist).Format("15:04") + ": " + reason
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	h.cancel = cancel
	go func() { defer close(h.done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-h.done })
	return h
}

// advanceTo waits until the scheduler has armed its timer, then sets the clock.
func (h *schedHarness) advanceTo(t *testing.T, at time.Time) {
	t.Helper()
	h.waitArmed(t)
	h.clk.Set(at)
}

// waitArmed waits until the scheduler has armed its timer, which it does
// after settling every schedule: what it sends before, it has sent.
func (h *schedHarness) waitArmed(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.clk.WaitPending(ctx, 1); err != nil {
		t.Fatal("the scheduler armed no timer")
	}
}

func expect(t *testing.T, ch chan string, what string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-ch:
			if !strings.HasPrefix(got, w) {
				t.Errorf("%s: got %q, want %q", what, got, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing within 10s, want %q", what, w)
		}
	}
}

// expectNone checks nothing more came. It is called after an event that
// the scheduler delivers after everything it would have sent before.
func expectNone(t *testing.T, ch chan string, what string) {
	t.Helper()
	select {
	case got := <-ch:
		t.Errorf("%s: unexpected %q", what, got)
	default:
	}
}

// TestSchedulerFiresOnTime: each slot fires when the clock reaches it, and
// a schedule the ledger does not know is armed.
func TestSchedulerFiresOnTime(t *testing.T) {
	start := istAt(2026, 3, 2, 9, 0)
	h := runScheduler(t, start, []triggers.Entry{{Name: "tape", Spec: spec(t, "*/5 * * * *"), Text: "check"}}, nil)
	expect(t, h.armed, "armed", "tape@09:00")
	h.advanceTo(t, istAt(2026, 3, 2, 9, 5))
	expect(t, h.fired, "fired", "tape@09:05")
	h.advanceTo(t, istAt(2026, 3, 2, 9, 10))
	expect(t, h.fired, "fired", "tape@09:10")
	expectNone(t, h.missed, "missed")
}

// TestSchedulerClockJump: when the clock passes several slots at once, the
// latest fires and each earlier one is reported missed.
func TestSchedulerClockJump(t *testing.T) {
	h := runScheduler(t, istAt(2026, 3, 2, 9, 0), []triggers.Entry{{Name: "tape", Spec: spec(t, "*/5 * * * *")}}, nil)
	h.advanceTo(t, istAt(2026, 3, 2, 9, 20))
	expect(t, h.missed, "missed", "tape@09:05: the clock passed", "tape@09:10", "tape@09:15")
	expect(t, h.fired, "fired", "tape@09:20")
}

// TestSchedulerMissedPolicies: slots that passed while deskd was down are
// put to each schedule's policy at start; none is skipped silently.
func TestSchedulerMissedPolicies(t *testing.T) {
	now := istAt(2026, 3, 2, 9, 7)
	last := map[string]time.Time{
		"skip":    istAt(2026, 3, 2, 8, 50),
		"within":  istAt(2026, 3, 2, 8, 50),
		"tooold":  istAt(2026, 3, 2, 8, 0),
		"nothing": istAt(2026, 3, 2, 9, 6),
	}
	h := runScheduler(t, now, []triggers.Entry{
		{Name: "skip", Spec: spec(t, "*/5 * * * *")},
		{Name: "within", Spec: spec(t, "*/5 * * * *"), RunWithin: 10 * time.Minute},
		{Name: "tooold", Spec: spec(t, "30 8 * * *"), RunWithin: 10 * time.Minute},
		{Name: "nothing", Spec: spec(t, "0 10 * * *"), RunWithin: 10 * time.Minute},
	}, last)
	expect(t, h.missed, "missed (skip)",
		"skip@08:55: deskd was not running at the slot, and the schedule's missed policy is skip",
		"skip@09:00: deskd was not running", "skip@09:05: deskd was not running")
	expect(t, h.missed, "missed (within)", "within@08:55: deskd was not running at the slot; only the latest", "within@09:00")
	expect(t, h.fired, "fired (within)", "within@09:05")
	expect(t, h.missed, "missed (too old)", "tooold@08:30: deskd was not running at the slot, and it is 37m0s late, more than run_within (10m0s)")
	h.waitArmed(t)
	expectNone(t, h.missed, "missed")
	expectNone(t, h.fired, "fired")
	expectNone(t, h.armed, "armed")
}

// TestSchedulerBackwardClock: a restart after the clock stepped back never
// fires a slot the ledger already holds.
func TestSchedulerBackwardClock(t *testing.T) {
	h := runScheduler(t, istAt(2026, 3, 2, 9, 2), []triggers.Entry{{Name: "tape", Spec: spec(t, "*/5 * * * *"), RunWithin: time.Hour}},
		map[string]time.Time{"tape": istAt(2026, 3, 2, 9, 10)})
	h.advanceTo(t, istAt(2026, 3, 2, 9, 10))
	h.advanceTo(t, istAt(2026, 3, 2, 9, 15))
	expect(t, h.fired, "fired", "tape@09:15")
	expectNone(t, h.missed, "missed")
}

// TestSchedulerManyMissed: a long outage is reported without a flood: the
// latest slots one by one, the count of the earlier ones in the first.
// The slot at the very instant of the start is on time, and fires.
func TestSchedulerManyMissed(t *testing.T) {
	h := runScheduler(t, istAt(2026, 3, 2, 12, 0), []triggers.Entry{{Name: "tick", Spec: spec(t, "* * * * *")}},
		map[string]time.Time{"tick": istAt(2026, 3, 2, 9, 0)})
	expect(t, h.missed, "first missed", "tick@10:20: deskd was not running at the slot, and the schedule's missed policy is skip (79 earlier slots")
	for range 99 {
		expect(t, h.missed, "missed", "tick@")
	}
	expect(t, h.fired, "fired", "tick@12:00")
	h.waitArmed(t)
	expectNone(t, h.missed, "missed")
}

// TestSchedulerCountsFromWhenItsSchedulesTookEffect: a scheduler whose Run
// begins late (its goroutine ran after the desk had started) still fires
// the slot that came in between: it counts from From, not from Run's start.
func TestSchedulerCountsFromWhenItsSchedulesTookEffect(t *testing.T) {
	clk := clock.NewFake(istAt(2026, 3, 2, 9, 0).Add(500 * time.Millisecond))
	fired, armed := make(chan string, 10), make(chan string, 10)
	s := &triggers.Scheduler{
		Desk: "main", Clock: clk, From: istAt(2026, 3, 2, 9, 0).Add(-time.Second),
		Entries: []triggers.Entry{{Name: "tape", Spec: spec(t, "* * * * *"), Text: "check"}},
		Last:    func(string) (time.Time, bool) { return time.Time{}, false },
		Arm:     func(e triggers.Entry, from time.Time) { armed <- e.Name + "@" + from.In(ist).Format("15:04:05") },
		Fire: func(e triggers.Entry, slot time.Time, _ triggers.Trigger) {
			fired <- e.Name + "@" + slot.In(ist).Format("15:04")
		},
		Missed: func(e triggers.Entry, slot time.Time, reason string) {
			t.Errorf("%s@%v missed: %s", e.Name, slot, reason)
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	expect(t, armed, "armed", "tape@08:59:59")
	expect(t, fired, "fired", "tape@09:00")
}

// TestSchedulerMissedRun: the slots of a long outage are summed up once
// per schedule for MissedRun: the count of all of them (not only those
// listed one by one), the first and the last.
func TestSchedulerMissedRun(t *testing.T) {
	clk := clock.NewFake(istAt(2026, 3, 2, 12, 0))
	type run struct {
		name        string
		n           int
		first, last time.Time
		reason      string
	}
	runs, fired := make(chan run, 10), make(chan string, 10)
	s := &triggers.Scheduler{
		Desk: "main", Clock: clk,
		Entries: []triggers.Entry{{Name: "tick", Spec: spec(t, "* * * * *")}, {Name: "open", Spec: spec(t, "15 9 * * *")}},
		Last: func(name string) (time.Time, bool) {
			if name == "tick" {
				return istAt(2026, 3, 2, 9, 0), true
			}
			return istAt(2026, 3, 1, 9, 15), true
		},
		Fire:   func(e triggers.Entry, slot time.Time, _ triggers.Trigger) { fired <- e.Name },
		Missed: func(triggers.Entry, time.Time, string) {},
		MissedRun: func(e triggers.Entry, n int, first, last time.Time, reason string) {
			runs <- run{e.Name, n, first, last, reason}
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	got := <-runs
	if got.name != "tick" || got.n != 179 || !got.first.Equal(istAt(2026, 3, 2, 9, 1)) || !got.last.Equal(istAt(2026, 3, 2, 11, 59)) ||
		!strings.Contains(got.reason, "policy is skip") {
		t.Errorf("MissedRun = %+v, want tick: 179 slots from 09:01 to 11:59", got)
	}
	expect(t, fired, "fired", "tick")
	got = <-runs
	if got.name != "open" || got.n != 1 || !got.first.Equal(istAt(2026, 3, 2, 9, 15)) || !got.last.Equal(got.first) {
		t.Errorf("MissedRun = %+v, want open: 1 slot at 09:15", got)
	}
	select {
	case r := <-runs:
		t.Errorf("a third MissedRun: %+v", r)
	default:
	}
}
