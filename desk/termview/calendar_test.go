package termview_test

import (
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// TestPrintStatusCalendarEnd: deskd status's MARKET column reads "NSE
// unknown" past the calendar's end under hold, "NSE assumed open" under
// weekdays, never "NSE open"; a note under the table says when the
// calendar ends or ended and what to do; an older deskd's status (no
// market field) still reads "NSE open".
func TestPrintStatusCalendarEnd(t *testing.T) {
	n := func(v int) *int { return &v }
	open := true
	for _, tt := range []struct {
		name  string
		st    desk.Status
		want  []string
		never string
	}{
		{"held", desk.Status{Name: "main", Calendar: "NSE", Market: triggers.MarketUnknown, CalendarThrough: "2026-12-31", CalendarDaysLeft: n(-26), CalendarEnding: true},
			[]string{"NSE unknown", "desk main: calendar NSE ended 2026-12-31 (26 days ago): its trading_days and market_hours slots are held (beyond_calendar: hold); add the exchange's published dates in calendars.d/NSE.yaml (extends: NSE, a later through)"},
			"NSE open"},
		{"assumed", desk.Status{Name: "main", Calendar: "NSE", Market: triggers.MarketAssumedOpen, CalendarThrough: "2026-12-31", CalendarDaysLeft: n(-26), CalendarEnding: true},
			[]string{"NSE assumed open", "the market is assumed from its weekdays and sessions, with no holidays (beyond_calendar: weekdays)"}, "NSE open "},
		{"ending", desk.Status{Name: "main", Calendar: "NSE", Market: triggers.MarketOpen, MarketOpen: &open, CalendarThrough: "2026-12-31", CalendarDaysLeft: n(29), CalendarEnding: true},
			[]string{"NSE open", "desk main: calendar NSE ends 2026-12-31, in 29 days;"}, "held"},
		{"far from the end", desk.Status{Name: "main", Calendar: "NSE", Market: triggers.MarketOpen, MarketOpen: &open, CalendarThrough: "2026-12-31", CalendarDaysLeft: n(200)},
			[]string{"NSE open"}, "calendar NSE ends"},
		{"an older deskd", desk.Status{Name: "main", Calendar: "NSE", MarketOpen: &open}, []string{"NSE open"}, "calendar NSE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			has(t, "deskd status", status(tt.st), tt.want, tt.never)
		})
	}
}
