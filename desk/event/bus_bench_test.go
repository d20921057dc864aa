package event_test

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
)

// BenchmarkPublish is one publication: to a bus nobody listens to, to one
// subscriber of its type (another topic's subscriber beside it), and to
// four SubscribeAll subscribers (the daemon's log, metrics, event ring and
// notifier). Handlers do nothing; what is measured is the bus.
func BenchmarkPublish(b *testing.B) {
	e := event.TurnStarted{Header: at(1), Turn: 1, Session: "s-1", Trigger: "t-1"}
	cases := []struct {
		name  string
		setup func(*event.Bus) []func()
	}{
		{"no-subscriber", func(*event.Bus) []func() { return nil }},
		{"no-subscriber-of-its-topic", func(bus *event.Bus) []func() {
			return []func(){event.Subscribe(bus, func(event.TurnCompleted) {})}
		}},
		{"one-subscriber", func(bus *event.Bus) []func() {
			return []func(){event.Subscribe(bus, func(event.TurnStarted) {}), event.Subscribe(bus, func(event.TurnCompleted) {})}
		}},
		{"four-subscribe-all", func(bus *event.Bus) []func() {
			var cs []func()
			for range 4 {
				cs = append(cs, event.SubscribeAll(bus, func(event.Event) {}))
			}
			return cs
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			bus := event.New()
			defer bus.Close()
			for _, cancel := range c.setup(bus) {
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				event.Publish(bus, e)
			}
		})
	}
}

// BenchmarkJSON is one event as the event stream and NATS carry it.
func BenchmarkJSON(b *testing.B) {
	e := event.TurnCompleted{Header: at(1), Session: "s-1", Turn: 3, Trigger: "t-1", Model: "gpt", Provider: "openai", InputTokens: 812}
	b.ReportAllocs()
	for b.Loop() {
		_ = event.JSON(e)
	}
}
