package metrics

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// fakeFailed is a Desks that runs no desk, and whose failed desks are
// failed.
type fakeFailed struct{ failed map[string]desk.Failure }

func (fakeFailed) List() []*desk.Desk                { return nil }
func (f fakeFailed) Failed() map[string]desk.Failure { return f.failed }

// TestMetricsFailedDesk: deskd_desk_failed{desk} is 1, read at each scrape,
// while the desks' set lists the desk as failed to start, and absent once
// it does not (it started, or its file was removed).
func TestMetricsFailedDesk(t *testing.T) {
	bus := event.New()
	m := New(bus)
	t.Cleanup(func() { m.Close(); bus.Close() })
	ds := fakeFailed{failed: map[string]desk.Failure{"m2": {File: "/s/desks/m2/rollover.json", Reason: "damaged", Since: time.Now()}}}
	m.SetGauges(DeskGauges(ds))
	fams := metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(fams, "deskd_desk_failed", "desk", "m2"); !ok || v != 1 {
		t.Errorf("deskd_desk_failed{desk=m2} = %v (present %v), want 1", v, ok)
	}
	if v, ok := metricstest.Value(fams, "deskd_queue_depth", "desk", "m2"); ok {
		t.Errorf("deskd_queue_depth{desk=m2} = %v for a desk that failed to start, want it absent", v)
	}
	delete(ds.failed, "m2")
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_desk_failed", "desk", "m2"); ok {
		t.Errorf("deskd_desk_failed{desk=m2} = %v once it is no longer failed, want it absent", v)
	}
}
