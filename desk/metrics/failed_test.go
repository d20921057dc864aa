package metrics

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsFailedDesk: deskd_desk_failed{desk} is 1, read at each scrape,
// while the desks' set lists the desk as failed to start, and absent once
// it does not (it started, or its file was removed).
func TestMetricsFailedDesk(t *testing.T) {
	bus := event.New()
	m := New(bus)
	t.Cleanup(func() { m.Close(); bus.Close() })
	ds := desk.NewSet()
	ds.Fail("m2", desk.Failure{File: "/s/desks/m2/rollover.json", Reason: "damaged", Since: time.Now()})
	m.SetGauges(DeskGauges(ds))
	fams := metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(fams, "deskd_desk_failed", "desk", "m2"); !ok || v != 1 {
		t.Errorf("deskd_desk_failed{desk=m2} = %v (present %v), want 1", v, ok)
	}
	if v, ok := metricstest.Value(fams, "deskd_queue_depth", "desk", "m2"); ok {
		t.Errorf("deskd_queue_depth{desk=m2} = %v for a desk that failed to start, want it absent", v)
	}
	ds.Unfail("m2")
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_desk_failed", "desk", "m2"); ok {
		t.Errorf("deskd_desk_failed{desk=m2} = %v once it is no longer failed, want it absent", v)
	}
}
