package metrics_test

import (
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsFreeSpace: deskd_state_free_bytes is read from SetFreeSpace's
// function at each scrape, and absent before the probe's first look.
func TestMetricsFreeSpace(t *testing.T) {
	_, m := newMetrics(t)
	var free atomic.Uint64
	var known atomic.Bool
	if err := m.SetFreeSpace(func() (uint64, bool) { return free.Load(), known.Load() }); err != nil {
		t.Fatal(err)
	}
	if _, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_state_free_bytes"); ok {
		t.Error("deskd_state_free_bytes is present before the probe's first look")
	}
	free.Store(300 << 20)
	known.Store(true)
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_state_free_bytes"); !ok || v != 300<<20 {
		t.Errorf("deskd_state_free_bytes = %v, %v; want %d", v, ok, 300<<20)
	}
	free.Store(1 << 20)
	if v, _ := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_state_free_bytes"); v != 1<<20 {
		t.Errorf("deskd_state_free_bytes after the space fell = %v, want %d", v, 1<<20)
	}
	if err := m.SetFreeSpace(func() (uint64, bool) { return 0, false }); err == nil {
		t.Error("a second SetFreeSpace succeeded")
	}
}
