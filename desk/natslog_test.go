package desk_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
)

// TestLogNATSOutboxEvents: the NATS event outbox's announcements are
// logged as sentences, nats.outbox_full at warn, nats.duplicate (an event
// not on the stream) at error.
func TestLogNATSOutboxEvents(t *testing.T) {
	ist := kolkata(t)
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		pub          func(b *event.Bus)
		level, topic string
		want         string
	}{
		{func(b *event.Bus) {
			event.Publish(b, event.NATSOutboxFull{Header: event.Header{At: at}, MaxBytes: 4096, Waiting: 20, Dropped: 1})
		}, "warn", "nats.outbox_full", "the NATS event outbox is full (4096 bytes); new events are dropped until it drains (20 events waiting)"},
		{func(b *event.Bus) {
			event.Publish(b, event.NATSOutboxFull{Header: event.Header{At: at}, MaxBytes: 4096, Waiting: 2, Dropped: 1, Error: "no space left on device"})
		}, "warn", "nats.outbox_full", "the NATS event outbox cannot keep events (no space left on device); new events are dropped until it drains (2 events waiting)"},
		{func(b *event.Bus) {
			event.Publish(b, event.NATSOutboxDrained{Header: event.Header{At: at}, Since: at.Add(-time.Hour), Dropped: 7})
		}, "info", "nats.outbox_drained", "the NATS event outbox has drained (full since 2026-03-02 09:00:00); 7 events dropped"},
		{func(b *event.Bus) {
			event.Publish(b, event.NATSDuplicate{Header: event.Header{At: at, Desk: "main"}, Subject: "deskd.events.main.rollover.progress",
				EventID: "rollover:s1:reset", MsgID: "k-00ff", StreamSeq: 9})
		}, "error", "nats.duplicate", "NATS dropped event deskd.events.main.rollover.progress (Nats-Msg-Id k-00ff) as a duplicate of stream message 9, which is not deskd's copy: the event is not on the stream (a message published with deskd's id?)"},
	} {
		m := logLine(t, ist, at, tt.pub)
		if m["event"] != tt.topic || m["message"] != tt.want || m["level"] != tt.level {
			t.Errorf("line %v, want event %q level %q message %q", m, tt.topic, tt.level, tt.want)
		}
	}
}
