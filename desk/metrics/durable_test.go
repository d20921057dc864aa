package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/metrics/metricstest"
)

type durableCounts struct{ writes, fsyncs, syncfss int64 }

func (c *durableCounts) DurableCounts() (int64, int64, int64) { return c.writes, c.fsyncs, c.syncfss }

// TestMetricsDurable: the group commit's counts are read at each scrape,
// flushes are its fsyncs and syncfs calls together, and the metrics are
// absent until SetDurable.
func TestMetricsDurable(t *testing.T) {
	_, m := newMetrics(t)
	if fams := metricstest.Scrape(t, m.Handler()); fams["deskd_durable_flushes_total"] != nil {
		t.Error("deskd_durable_flushes_total present before SetDurable")
	}
	c := &durableCounts{writes: 64, fsyncs: 1, syncfss: 2}
	m.SetDurable(c)
	wantValues(t, m, map[string]float64{"deskd_durable_synced_writes_total": 64, "deskd_durable_flushes_total": 3,
		"deskd_durable_fsyncs_total": 1, "deskd_durable_syncfs_total": 2})
	c.writes, c.syncfss = 100, 5
	wantValues(t, m, map[string]float64{"deskd_durable_synced_writes_total": 100, "deskd_durable_flushes_total": 6, "deskd_durable_syncfs_total": 5})
}
