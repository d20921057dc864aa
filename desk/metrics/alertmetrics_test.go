package metrics

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsBudgetExceeded: each budget.exceeded counts once under its
// desk and budget (the DeskdBudgetReached alert reads it).
func TestMetricsBudgetExceeded(t *testing.T) {
	m, publish := newTestMetrics(t)
	publish(
		event.BudgetExceeded{Header: event.Header{Desk: "main"}, Budget: "day_cost", Limit: 5, Used: 6},
		event.BudgetExceeded{Header: event.Header{Desk: "main"}, Budget: "day_cost", Limit: 5, Used: 7},
		event.BudgetExceeded{Header: event.Header{Desk: "main"}, Budget: "day_tokens", Limit: 100, Used: 120},
	)
	fams := metricstest.Scrape(t, m.Handler())
	for budget, want := range map[string]float64{"day_cost": 2, "day_tokens": 1} {
		if v, ok := metricstest.Value(fams, "deskd_budget_exceeded_total", "budget", budget, "desk", "main"); !ok || v != want {
			t.Errorf("deskd_budget_exceeded_total{desk=main,budget=%s} = %v (present %v), want %v", budget, v, ok, want)
		}
	}
}

// TestMetricsStorageDegraded: deskd_storage_degraded{desk} is read at
// each scrape: 1 while the desk's storage is degraded, 0 otherwise.
func TestMetricsStorageDegraded(t *testing.T) {
	m, _ := newTestMetrics(t)
	gauges := []Gauges{{Desk: "main", StorageDegraded: true}, {Desk: "m2"}}
	m.SetGauges(func() []Gauges { return gauges })
	fams := metricstest.Scrape(t, m.Handler())
	for desk, want := range map[string]float64{"main": 1, "m2": 0} {
		if v, ok := metricstest.Value(fams, "deskd_storage_degraded", "desk", desk); !ok || v != want {
			t.Errorf("deskd_storage_degraded{desk=%s} = %v (present %v), want %v", desk, v, ok, want)
		}
	}
	gauges[0].StorageDegraded = false
	if v, _ := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_storage_degraded", "desk", "main"); v != 0 {
		t.Errorf("deskd_storage_degraded{desk=main} = %v once it can write, want 0", v)
	}
}
