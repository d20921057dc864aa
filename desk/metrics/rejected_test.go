package metrics_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsConfigRejected: deskd_config_rejected{desk} is 1 while a
// desk's (or, desk "", the main file's) file is refused, with its since,
// read at each scrape: a cleared rejection is gone.
func TestMetricsConfigRejected(t *testing.T) {
	_, m := newMetrics(t)
	early := time.Date(2026, 3, 2, 4, 32, 0, 0, time.UTC)
	late := early.Add(time.Hour)
	rs := []desk.ConfigRejection{
		{ConfigRejected: desk.ConfigRejected{Since: early, File: "deskd.yaml", Field: "timezone", Reason: "unknown"}},
		{ConfigRejected: desk.ConfigRejected{Since: late, File: "desks.d/fx.yaml", Field: "model", Reason: "unknown"}, Desk: "fx"},
		{ConfigRejected: desk.ConfigRejected{Since: late, File: "desks.d/fx.yaml", Field: "schedules[0].cron", Reason: "bad"}, Desk: "fx"},
	}
	m.SetRejections(func() []desk.ConfigRejection { return rs })

	fams := metricstest.Scrape(t, m.Handler())
	for _, tt := range []struct {
		desk  string
		since time.Time
	}{{"", early}, {"fx", late}} {
		if v, ok := metricstest.Value(fams, "deskd_config_rejected", "desk", tt.desk); !ok || v != 1 {
			t.Errorf("deskd_config_rejected{desk=%q} = %v, %v; want 1", tt.desk, v, ok)
		}
		if v, ok := metricstest.Value(fams, "deskd_config_rejected_since_timestamp_seconds", "desk", tt.desk); !ok || v != float64(tt.since.Unix()) {
			t.Errorf("deskd_config_rejected_since_timestamp_seconds{desk=%q} = %v, %v; want %d", tt.desk, v, ok, tt.since.Unix())
		}
	}
	if n := len(fams["deskd_config_rejected"].GetMetric()); n != 2 {
		t.Errorf("deskd_config_rejected has %d series, want 2 (one per desk)", n)
	}

	rs = rs[1:] // the main file is good again
	fams = metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(fams, "deskd_config_rejected", "desk", ""); ok {
		t.Errorf("after the fix, deskd_config_rejected{desk=\"\"} = %v; want no series", v)
	}
	if _, ok := metricstest.Value(fams, "deskd_config_rejected", "desk", "fx"); !ok {
		t.Error("deskd_config_rejected{fx} is gone, but fx is still refused")
	}
}
