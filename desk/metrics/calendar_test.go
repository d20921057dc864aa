package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/metrics"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsCalendarDaysLeft: deskd_calendar_days_left{calendar} is read
// from the desks' status at each scrape, one series per calendar however
// many desks follow it; a desk with no calendar adds none.
func TestMetricsCalendarDaysLeft(t *testing.T) {
	_, m := newMetrics(t)
	left := -26
	m.SetGauges(func() []metrics.Gauges {
		return []metrics.Gauges{
			{Desk: "a", Calendar: "NSE", CalendarDaysLeft: &left},
			{Desk: "b", Calendar: "NSE", CalendarDaysLeft: &left},
			{Desk: "c"},
		}
	})
	body := metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(body, "deskd_calendar_days_left", "calendar", "NSE"); !ok || v != -26 {
		t.Errorf("deskd_calendar_days_left{calendar=NSE} = %v (present %v), want -26", v, ok)
	}
	if f := body["deskd_calendar_days_left"]; f == nil || len(f.GetMetric()) != 1 {
		t.Errorf("deskd_calendar_days_left = %v, want one series", f)
	}
}
