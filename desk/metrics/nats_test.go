package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsNATS: deskd_nats_naks_total{desk,reason} counts the
// nats.backpressure events; deskd_nats_connected is absent until SetNATS,
// then 1 or 0 as the connection is, read at each scrape.
func TestMetricsNATS(t *testing.T) {
	bus, m := newMetrics(t)
	if _, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_nats_connected"); ok {
		t.Error("deskd_nats_connected is present without NATS")
	}
	for _, r := range []string{"queue_full", "queue_full", "paused"} {
		event.Publish(bus, event.NATSBackpressure{Header: event.Header{Desk: "fx"}, Reason: r})
	}
	bus.Close() // every event delivered
	connected := false
	m.SetNATS(func() bool { return connected })
	fams := metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(fams, "deskd_nats_naks_total", "desk", "fx", "reason", "queue_full"); !ok || v != 2 {
		t.Errorf("deskd_nats_naks_total{fx,queue_full} = %v, %v; want 2", v, ok)
	}
	if v, ok := metricstest.Value(fams, "deskd_nats_naks_total", "desk", "fx", "reason", "paused"); !ok || v != 1 {
		t.Errorf("deskd_nats_naks_total{fx,paused} = %v, %v; want 1", v, ok)
	}
	if v, ok := metricstest.Value(fams, "deskd_nats_connected"); !ok || v != 0 {
		t.Errorf("deskd_nats_connected = %v, %v; want 0 while away", v, ok)
	}
	connected = true
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_nats_connected"); !ok || v != 1 {
		t.Errorf("deskd_nats_connected = %v, %v; want 1 once connected", v, ok)
	}
}
