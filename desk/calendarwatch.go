package desk

import (
	"context"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
)

// CalendarEndings returns the calendars the desks of cfg follow that end
// within cfg.CalendarWarnDays of today's trading date (or have ended), as
// calendar.ending announces them at now, sorted by name.
func CalendarEndings(cfg *config.Config, now time.Time) []event.CalendarEnding {
	var out []event.CalendarEnding
	for _, e := range cfg.CalendarsEnding(now) {
		out = append(out, event.CalendarEnding{Header: event.Header{At: now}, Calendar: e.Calendar.Name, Through: e.Calendar.Through, DaysLeft: e.DaysLeft})
	}
	return out
}

// calendarWatch announces calendar.ending for each calendar in use that
// ends within calendar_warn_days: at start and at each new trading date,
// once per calendar and date (the event's log line is a warning).
type calendarWatch struct {
	cfg   func() *config.Config // the config in force
	clock clock.Clock
	bus   *event.Bus
	// told is, per calendar, the trading date it was last announced on.
	told map[string]memory.Date
}

// check announces what ends, as of now.
func (w *calendarWatch) check() {
	cfg := w.cfg()
	now := w.clock.Now()
	today := cfg.Day.DateOf(now)
	for _, e := range CalendarEndings(cfg, now) {
		if w.told[e.Calendar] == today {
			continue
		}
		w.told[e.Calendar] = today
		event.Publish(w.bus, e)
	}
}

// watchCalendars starts the daemon's calendarWatch; the function it
// returns stops it and waits for it.
func (d *Daemon) watchCalendars(ctx context.Context) (stop func()) {
	w := &calendarWatch{cfg: d.cur.Load, clock: d.o.Clock, bus: d.o.Bus, told: map[string]memory.Date{}}
	w.check() // before the desks are said to be ready: deskd status shows it from the start
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	// The timer of the next trading date is armed before this returns, so
	// that a clock moved from then on (a test's fake one) is seen.
	arm := func() clock.Timer {
		now := w.clock.Now()
		return w.clock.NewTimer(w.cfg().Day.NextBoundary(now).Sub(now))
	}
	t := arm()
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			w.check()
			t = arm()
		}
	}()
	return func() { cancel(); <-done }
}
