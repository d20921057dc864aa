package desk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

// endingNSE is NSE-like, Mon-Fri 09:15-15:30 IST, covering 2026 only.
func endingNSE() *triggers.Calendar {
	cal := &triggers.Calendar{Name: "NSE", Location: ist, Through: "2026-12-31",
		Sessions: []triggers.Session{{Open: 9*time.Hour + 15*time.Minute, Close: 15*time.Hour + 30*time.Minute}},
		Holidays: map[string]string{"2026-12-25": "Christmas"}, Special: map[string]triggers.SpecialDay{}}
	for d := time.Monday; d <= time.Friday; d++ {
		cal.Weekdays[d] = true
	}
	return cal
}

// TestStatusAtCalendarEnd: the status shows the calendar's end and the
// days left to it on deskd's trading dates; past the end the market is
// unknown under hold (never open, and market_open is left out) and
// assumed under weekdays.
func TestStatusAtCalendarEnd(t *testing.T) {
	for _, tt := range []struct {
		name     string
		at       time.Time
		beyond   triggers.Beyond
		market   triggers.MarketState
		open     *bool
		daysLeft int
		ending   bool
	}{
		{"a month before", time.Date(2026, 11, 20, 10, 0, 0, 0, ist), triggers.BeyondHold, triggers.MarketOpen, ptr(true), 41, false},
		{"in the warning window", time.Date(2026, 12, 2, 10, 0, 0, 0, ist), triggers.BeyondHold, triggers.MarketOpen, ptr(true), 29, true},
		{"the last date", time.Date(2026, 12, 31, 16, 0, 0, 0, ist), triggers.BeyondHold, triggers.MarketClosed, ptr(false), 0, true},
		{"Republic Day 2027, hold", time.Date(2027, 1, 26, 10, 0, 0, 0, ist), triggers.BeyondHold, triggers.MarketUnknown, nil, -26, true},
		{"Republic Day 2027, the zero Beyond", time.Date(2027, 1, 26, 10, 0, 0, 0, ist), "", triggers.MarketUnknown, nil, -26, true},
		{"Republic Day 2027, weekdays", time.Date(2027, 1, 26, 10, 0, 0, 0, ist), triggers.BeyondWeekdays, triggers.MarketAssumedOpen, nil, -26, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := desktest.New(t, desktest.Options{Clock: clock.NewFake(tt.at), Calendar: endingNSE(), Beyond: tt.beyond, WarnDays: 30})
			st := h.Desk.Status()
			if st.Market != tt.market || st.Calendar != "NSE" || st.CalendarThrough != "2026-12-31" {
				t.Errorf("market %q, calendar %q through %q; want %q, NSE through 2026-12-31", st.Market, st.Calendar, st.CalendarThrough, tt.market)
			}
			if (st.MarketOpen == nil) != (tt.open == nil) || (st.MarketOpen != nil && *st.MarketOpen != *tt.open) {
				t.Errorf("market_open = %v, want %v", deref(st.MarketOpen), deref(tt.open))
			}
			if st.CalendarDaysLeft == nil || *st.CalendarDaysLeft != tt.daysLeft || st.CalendarEnding != tt.ending {
				t.Errorf("calendar_days_left = %v, ending %v; want %d, %v", deref(st.CalendarDaysLeft), st.CalendarEnding, tt.daysLeft, tt.ending)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestHeldSlotsPastCalendarEnd: past the calendar's end under hold, a
// market_hours schedule's slots are recorded missed in the ledger with
// the calendar's reason, announced once per schedule and day as a held
// schedule.missed, and reach no model; the status names no next slot.
func TestHeldSlotsPastCalendarEnd(t *testing.T) {
	every30, err := triggers.ParseSpec("*/30 * * * *", ist)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2027, 1, 1, 9, 59, 0, 0, ist) // Friday, past the end
	clk := clock.NewFake(start)
	g := desktest.NewGate()
	cal := endingNSE()
	h := desktest.New(t, desktest.Options{Clock: clk, Model: g, Calendar: cal,
		Schedules: []triggers.Entry{{Name: "tape", Spec: every30, Text: "tape", Calendar: cal, On: triggers.MarketHours}}})
	if st := h.Desk.Status(); st.NextSchedule != "" {
		t.Errorf("next slot %s %v: a held slot will not fire", st.NextSchedule, st.NextSlot)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	step := func(at time.Time) {
		t.Helper()
		if err := clk.WaitTimerAt(ctx, at); err != nil {
			t.Fatal(err)
		}
		clk.Set(at)
	}
	step(time.Date(2027, 1, 1, 10, 0, 0, 0, ist))
	ev := eventtest.Next[event.ScheduleMissed](h.Events)
	if !ev.Held || ev.Schedule != "tape" || ev.Reason != "calendar NSE ends 2026-12-31" || !ev.Slot.Equal(time.Date(2027, 1, 1, 10, 0, 0, 0, ist)) {
		t.Errorf("schedule.missed = %+v, want tape's 10:00 slot held: calendar NSE ends 2026-12-31", ev)
	}
	step(time.Date(2027, 1, 1, 10, 30, 0, 0, ist))
	if err := clk.WaitTimerAt(ctx, time.Date(2027, 1, 1, 11, 0, 0, 0, ist)); err != nil { // 10:30 settled
		t.Fatal(err)
	}
	for _, slot := range []time.Time{time.Date(2027, 1, 1, 10, 0, 0, 0, ist), time.Date(2027, 1, 1, 10, 30, 0, 0, ist)} {
		r, ok := h.Ledger.Get(triggers.SlotID("tape", slot))
		if !ok || r.State != triggers.StateMissed || r.Reason != "calendar NSE ends 2026-12-31" {
			t.Errorf("ledger record of %v = %+v, %v; want missed: calendar NSE ends 2026-12-31", slot, r, ok)
		}
	}
	// The next trading day (Monday) is announced again, once.
	clk.Set(time.Date(2027, 1, 4, 9, 14, 0, 0, ist))
	step(time.Date(2027, 1, 4, 9, 30, 0, 0, ist))
	ev = eventtest.Next[event.ScheduleMissed](h.Events)
	if !ev.Held || !ev.Slot.Equal(time.Date(2027, 1, 4, 9, 30, 0, 0, ist)) {
		t.Errorf("Monday's schedule.missed = %+v, want the held 09:30 slot (the 10:30 one of Friday was not announced again)", ev)
	}
	g.ExpectNoCall(t, "a held slot")
	eventtest.ExpectNone[event.TurnStarted](h.Events)
}

// TestTradingDayRolloverPastCalendarEnd: rollover: trading_day falls back
// to daily past the calendar's end: a Saturday past it opens a new
// session, where a Saturday before it keeps Friday's.
func TestTradingDayRolloverPastCalendarEnd(t *testing.T) {
	friday := time.Date(2027, 1, 1, 11, 0, 0, 0, ist)
	clk := clock.NewFake(friday)
	h := desktest.New(t, desktest.Options{Clock: clk, Calendar: endingNSE(), TradingDay: true})
	turn := func(id string) event.TurnCompleted {
		h.Submit(triggers.Trigger{ID: id, Kind: triggers.Manual, Text: id})
		return eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == id })
	}
	fri := turn("fri")
	clk.Set(friday.AddDate(0, 0, 1))
	if sat := turn("sat"); sat.Session == fri.Session {
		t.Errorf("Saturday past the calendar's end stayed in Friday's session %s: want a daily rollover", fri.Session)
	}
}

// TestCalendarEndings: the calendars in use that end within
// calendar_warn_days of today's trading date are reported, with the days
// left (negative past the end); one beyond the window, or not in use, is not.
func TestCalendarEndings(t *testing.T) {
	nse, far := endingNSE(), endingNSE()
	far.Name, far.Through = "FAR", "2027-12-31"
	unused := endingNSE()
	unused.Name = "UNUSED"
	cfg := &config.Config{
		Day:              desktest.Day(),
		CalendarWarnDays: 30,
		Calendars:        map[string]*triggers.Calendar{"NSE": nse, "FAR": far, "UNUSED": unused},
		Desks: map[string]*config.Desk{
			"a": {Name: "a", Calendar: "NSE"},
			"b": {Name: "b", Schedules: []config.Schedule{{Name: "x", Calendar: "far"}}},
		},
	}
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 12, 1, 10, 0, 0, 0, ist), "NSE 2026-12-31 30"},
		{time.Date(2026, 11, 30, 10, 0, 0, 0, ist), ""},
		// 2026-12-31 19:00Z is 2027-01-01 00:30 IST: deskd's trading date decides.
		{time.Date(2026, 12, 31, 19, 0, 0, 0, time.UTC), "NSE 2026-12-31 -1"},
	} {
		var got []string
		for _, e := range desk.CalendarEndings(cfg, tt.at) {
			got = append(got, e.Calendar+" "+e.Through+" "+itoa(e.DaysLeft))
		}
		if strings.Join(got, "; ") != tt.want {
			t.Errorf("CalendarEndings(%v) = %q, want %q", tt.at, got, tt.want)
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestHeldMissedLogsAtError: a held schedule.missed is logged at error
// (nothing of the schedule fires until the calendar is extended); a
// calendar.ending at warn, saying what to do.
func TestHeldMissedLogsAtError(t *testing.T) {
	at := time.Date(2027, 1, 26, 4, 30, 0, 0, time.UTC)
	m := logLine(t, ist, at, func(b *event.Bus) {
		event.Publish(b, event.ScheduleMissed{Header: event.Header{At: at, Desk: "main"}, Schedule: "tape", Slot: at, First: at, Last: at, Count: 1,
			Reason: "calendar NSE ends 2026-12-31", Held: true})
	})
	if m["level"] != "error" || m["held"] != true {
		t.Errorf("held schedule.missed logged %v, want level error and held", m)
	}
	m = logLine(t, ist, at, func(b *event.Bus) {
		event.Publish(b, event.ScheduleMissed{Header: event.Header{At: at, Desk: "main"}, Schedule: "tape", Slot: at, Count: 1, Reason: "desk paused"})
	})
	if m["level"] != "warn" {
		t.Errorf("schedule.missed logged at %v, want warn", m["level"])
	}
	m = logLine(t, ist, at, func(b *event.Bus) {
		event.Publish(b, event.CalendarEnding{Header: event.Header{At: at}, Calendar: "NSE", Through: "2026-12-31", DaysLeft: 29})
	})
	if msg, _ := m["message"].(string); m["level"] != "warn" || m["event"] != "calendar.ending" || !strings.Contains(msg, "calendar NSE ends 2026-12-31, in 29 days") ||
		!strings.Contains(msg, "calendars.d/NSE.yaml (extends: NSE") {
		t.Errorf("calendar.ending logged %v", m)
	}
}

// TestDaemonAnnouncesCalendarEnding: the daemon announces a calendar in
// use that ends within calendar_warn_days at start and again at each new
// trading date (deskd's, IST midnight here), once per calendar and date,
// with the days left counting down.
func TestDaemonAnnouncesCalendarEnding(t *testing.T) {
	dir := daemonConfig(t, daemonMain+"calendar_warn_days: 2\n", map[string]string{
		"main":  daemonDesk("offline") + "calendar: X\n",
		"other": daemonDesk("offline") + "calendar: X\n",
	})
	writeConfigFile(t, dir, "calendars.d/X.yaml", "timezone: Asia/Kolkata\nthrough: 2026-03-04\nsessions: [{open: \"09:15\", close: \"15:30\"}]\n")
	r := startDaemon(t, dir) // 2026-03-02 10:00 IST
	got := expectEvent(r, func(event.CalendarEnding) bool { return true })
	if got.Calendar != "X" || got.Through != "2026-03-04" || got.DaysLeft != 2 {
		t.Errorf("calendar.ending at start = %+v, want X through 2026-03-04, 2 days left", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	midnight := time.Date(2026, 3, 3, 0, 0, 0, 0, ist)
	if err := r.clk.WaitTimerAt(ctx, midnight); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(midnight)
	got = expectEvent(r, func(event.CalendarEnding) bool { return true })
	if got.DaysLeft != 1 || !got.At.Equal(midnight) {
		t.Errorf("calendar.ending at the new trading date = %+v, want 1 day left, at %v", got, midnight)
	}
	r.stop() // the bus is drained: every event published has arrived
	for {
		select {
		case e := <-r.events:
			if ce, ok := e.(event.CalendarEnding); ok {
				t.Errorf("calendar.ending announced again (two desks follow X: once per calendar and date): %+v", ce)
			}
			continue
		default:
		}
		break
	}
}
