package metrics

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsFailedDesk: deskd_desk_failed{desk} is 1 from a desk's
// desk.failed, and absent once it starts (desk.started).
func TestMetricsFailedDesk(t *testing.T) {
	bus := event.New()
	counted := make(chan event.Event, 16)
	m := newRegistry(bus, func(e event.Event) { counted <- e })
	t.Cleanup(func() { m.Close(); bus.Close() })
	wait := func() {
		t.Helper()
		select {
		case <-counted:
		case <-time.After(10 * time.Second):
			t.Fatal("the metrics did not count the event within 10s")
		}
	}
	at := time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)
	event.Publish(bus, event.DeskFailed{Header: event.Header{At: at, Desk: "m2"}, File: "/s/desks/m2/rollover.json", Reason: "damaged"})
	wait()
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_desk_failed", "desk", "m2"); !ok || v != 1 {
		t.Errorf("deskd_desk_failed{desk=m2} = %v (present %v), want 1", v, ok)
	}
	event.Publish(bus, event.DeskStarted{Header: event.Header{At: at, Desk: "m2"}, Model: "offline"})
	wait()
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_desk_failed", "desk", "m2"); ok {
		t.Errorf("deskd_desk_failed{desk=m2} = %v once it started, want it absent", v)
	}
}
