package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// newMetrics is a Registry on a fresh bus; both are closed at the end of
// the test (a test may close the bus before, to have every event
// delivered).
func newMetrics(t *testing.T) (*event.Bus, *metrics.Registry) {
	t.Helper()
	bus := event.New()
	m := metrics.New(bus)
	t.Cleanup(func() { m.Close(); bus.Close() })
	return bus, m
}

// wantValues fails the test unless a scrape of m serves each metric of
// want (by its name, without labels) with its value.
func wantValues(t *testing.T, m *metrics.Registry, want map[string]float64) {
	t.Helper()
	fams := metricstest.Scrape(t, m.Handler())
	for name, w := range want {
		if v, ok := metricstest.Value(fams, name); !ok || v != w {
			t.Errorf("%s = %v, %v; want %v", name, v, ok, w)
		}
	}
}
