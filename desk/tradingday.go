package desk

import (
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// TradingDayRouter is the router a keeper sees for a desk that rolls over
// by trading day (rollover: trading_day): a session stays current while no
// trading day of cal has begun since its own date, so a weekend or a
// holiday opens no new session, and the first trading day after it does.
//
// The keeper rolls over when the session's trading date is before today;
// this router reports today as the session's date while every date since
// the session's own is a non-trading day (and the session's own date while
// deskd's clock is behind it). Past the calendar's end (its
// through) it falls back to daily. Everything else is r's. With a nil
// calendar it returns r itself.
func TradingDayRouter(r *router.Router, cal *triggers.Calendar, day memory.TradingDay, clk clock.Clock) keeper.Router {
	if cal == nil {
		return r
	}
	return tradingDayRouter{Router: r, cal: cal, day: day, clk: clk}
}

type tradingDayRouter struct {
	*router.Router
	cal *triggers.Calendar
	day memory.TradingDay
	clk clock.Clock
}

// TradingDate returns today while no trading day has begun since the
// session's date, and the session's date otherwise.
func (t tradingDayRouter) TradingDate() (memory.Date, bool) {
	d, ok := t.Router.TradingDate()
	if !ok {
		return d, ok
	}
	today := t.day.DateOf(t.clk.Now())
	if !d.Before(today) {
		return d, ok
	}
	if sessionStays(t.cal, d, today) {
		return today, true
	}
	return d, ok
}

// sessionStays reports whether no date in (session, today] is a trading
// day of cal. Past the calendar's end nothing is known of trading days,
// and the rollover falls back to daily: a date there does not keep the
// session.
func sessionStays(cal *triggers.Calendar, session, today memory.Date) bool {
	n := 0
	for x := session.AddDays(1); !today.Before(x); x = x.AddDays(1) {
		noon := time.Date(x.Year, x.Month, x.Day, 12, 0, 0, 0, cal.Location)
		if !cal.Covers(noon) || cal.TradingDay(noon) {
			return false
		}
		if n++; n > 60 { // two months without a trading day: roll over anyway
			return false
		}
	}
	return true
}
