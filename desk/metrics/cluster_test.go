package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsCluster: deskd_desk_owned{desk} is 1 from desk.acquired and
// 0 from desk.lost or desk.released; deskd_failovers_total counts the
// acquisitions of a desk another host held before (previous set); both
// are absent without a cluster's events.
func TestMetricsCluster(t *testing.T) {
	bus, m := newMetrics(t)
	fams := metricstest.Scrape(t, m.Handler())
	for _, name := range []string{"deskd_desk_owned", "deskd_failovers_total"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s is present without a cluster's events", name)
		}
	}
	event.Publish(bus, event.DeskAcquired{Header: event.Header{Desk: "main"}, Host: "a", Epoch: 1})
	event.Publish(bus, event.DeskAcquired{Header: event.Header{Desk: "fx"}, Host: "a", Epoch: 7, Previous: "b"})
	event.Publish(bus, event.DeskAcquired{Header: event.Header{Desk: "rates"}, Host: "a", Epoch: 9, Previous: "c"})
	event.Publish(bus, event.DeskLost{Header: event.Header{Desk: "fx"}, Host: "a", Epoch: 7, Reason: "another host took the desk"})
	event.Publish(bus, event.DeskReleased{Header: event.Header{Desk: "rates"}, Host: "a", Epoch: 9})
	bus.Close() // every event delivered
	fams = metricstest.Scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"deskd_desk_owned", []string{"desk", "main"}, 1},
		{"deskd_desk_owned", []string{"desk", "fx"}, 0},
		{"deskd_desk_owned", []string{"desk", "rates"}, 0},
		{"deskd_failovers_total", nil, 2},
	} {
		if v, ok := metricstest.Value(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
}
