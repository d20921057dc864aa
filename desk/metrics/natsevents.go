package metrics

// NATSEvents is what the metrics read of the NATS event publisher at each
// scrape. *natsevents.Publisher is one.
type NATSEvents interface {
	// OutboxCounts returns how many events wait in the outbox, its file's
	// size, and how many events were published and dropped since start.
	OutboxCounts() (waiting int, bytes, published, dropped int64)
	// DuplicateCount returns how many events the stream dropped as a
	// duplicate of a message that was not deskd's copy (nats.duplicate).
	DuplicateCount() int64
}

// SetNATSEvents adds the metrics of the NATS event publisher, read from
// pub at each scrape: deskd_nats_outbox_events, deskd_nats_outbox_bytes,
// deskd_nats_events_published_total, deskd_nats_events_dropped_total and
// deskd_nats_events_duplicate_total.
// Without it (no NATS events configured) they are absent. Call it once.
func (m *Registry) SetNATSEvents(pub NATSEvents) {
	read := func(pick func(waiting int, bytes, published, dropped int64) int64) func() float64 {
		return func() float64 { return float64(pick(pub.OutboxCounts())) }
	}
	m.reg.MustRegister(
		gaugeFunc("deskd_nats_outbox_events",
			"Events waiting in the NATS event outbox for their PubAck.", read(func(w int, _, _, _ int64) int64 { return int64(w) })),
		gaugeFunc("deskd_nats_outbox_bytes",
			"The size of the NATS event outbox's file (bounded by nats.events max_bytes).", read(func(_ int, b, _, _ int64) int64 { return b })),
		counterFunc("deskd_nats_events_published_total",
			"Events NATS JetStream acknowledged (a duplicate the stream dropped counts too).", read(func(_ int, _, p, _ int64) int64 { return p })),
		counterFunc("deskd_nats_events_dropped_total",
			"Events the NATS event outbox could not keep (full, or its disk refused the write): NATS never receives them.", read(func(_ int, _, _, d int64) int64 { return d })),
		counterFunc("deskd_nats_events_duplicate_total",
			"Events JetStream dropped as a duplicate of a message with the same Nats-Msg-Id that was not deskd's copy (nats.duplicate): they are not on the stream.", func() float64 { return float64(pub.DuplicateCount()) }),
	)
}
