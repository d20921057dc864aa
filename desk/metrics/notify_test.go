package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// notifyCounts is a notifier's counts, as the metrics read them.
type notifyCounts struct {
	targets         []string
	pending, failed []int64
}

func (c *notifyCounts) NotifyCounts() ([]string, []int64, []int64) {
	return c.targets, c.pending, c.failed
}

// TestMetricsNotify: deskd_notify_pending and deskd_notify_failed_total
// are read per target at each scrape, and absent until SetNotify.
func TestMetricsNotify(t *testing.T) {
	_, m := newMetrics(t)
	if fams := metricstest.Scrape(t, m.Handler()); fams["deskd_notify_pending"] != nil {
		t.Error("deskd_notify_pending present without notify targets")
	}
	c := &notifyCounts{targets: []string{"chat", "ops"}, pending: []int64{0, 4}, failed: []int64{2, 0}}
	m.SetNotify(c)
	check := func(name, target string, want float64) {
		t.Helper()
		fam := metricstest.Scrape(t, m.Handler())[name]
		if fam == nil {
			t.Fatalf("%s absent", name)
		}
		for _, s := range fam.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == target {
					v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
					if v != want {
						t.Errorf("%s{target=%q} = %v, want %v", name, target, v, want)
					}
					return
				}
			}
		}
		t.Errorf("%s{target=%q} absent", name, target)
	}
	check("deskd_notify_pending", "ops", 4)
	check("deskd_notify_failed_total", "chat", 2)
	c.pending[1], c.failed[0] = 1, 3
	check("deskd_notify_pending", "ops", 1)
	check("deskd_notify_failed_total", "chat", 3)
}
