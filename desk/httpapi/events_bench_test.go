package httpapi

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
)

// BenchmarkEventRingAdd is one event into a full ring of RingSize, as every
// event of a running deskd is (the ring's subscriber's work, without the
// bus).
func BenchmarkEventRingAdd(b *testing.B) {
	bus := event.New()
	defer bus.Close()
	r := NewEventRing(bus, time.Unix(0, 0), RingSize)
	defer r.Close()
	e := event.TurnStarted{Header: event.Header{At: time.Unix(1, 0), Desk: "main"}, Turn: 1, Session: "s-1", Trigger: "t-1"}
	for range RingSize {
		r.add(e)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.add(e)
	}
}
