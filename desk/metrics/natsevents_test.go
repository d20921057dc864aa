package metrics_test

import (
	"testing"

	"github.com/deskd/deskd/desk/metrics/metricstest"
)

type outboxCounts struct {
	waiting                               int
	bytes, published, dropped, duplicates int64
}

func (c *outboxCounts) DuplicateCount() int64 { return c.duplicates }

func (c *outboxCounts) OutboxCounts() (int, int64, int64, int64) {
	return c.waiting, c.bytes, c.published, c.dropped
}

// TestMetricsNATSEvents: the NATS event publisher's counts are read at each
// scrape, and absent until SetNATSEvents.
func TestMetricsNATSEvents(t *testing.T) {
	_, m := newMetrics(t)
	if fams := metricstest.Scrape(t, m.Handler()); fams["deskd_nats_outbox_events"] != nil {
		t.Error("deskd_nats_outbox_events present without NATS events")
	}
	c := &outboxCounts{waiting: 3, bytes: 900, published: 10, dropped: 2, duplicates: 1}
	m.SetNATSEvents(c)
	wantValues(t, m, map[string]float64{"deskd_nats_outbox_events": 3, "deskd_nats_outbox_bytes": 900,
		"deskd_nats_events_published_total": 10, "deskd_nats_events_dropped_total": 2, "deskd_nats_events_duplicate_total": 1})
	c.waiting, c.published = 0, 13
	wantValues(t, m, map[string]float64{"deskd_nats_outbox_events": 0, "deskd_nats_events_published_total": 13})
}
