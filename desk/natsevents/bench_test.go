package natsevents_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/natsevents"
)

// benchmarkPublish measures event.Publish of a turn.completed on a bus,
// with the NATS publisher as its exporter when export is set. NATS is away
// (nothing is sent meanwhile), and the outbox's bound keeps every event.
func benchmarkPublish(b *testing.B, export bool) {
	bus := event.New()
	defer bus.Close()
	if export {
		nc, err := nats.Connect("nats://127.0.0.1:1", nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		pub, err := natsevents.New(natsevents.Options{Conn: nc, Stream: stream, Subject: subject, Dir: b.TempDir(),
			MaxBytes: 1 << 30, Bus: bus, Clock: clock.NewFake(t0), Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		pub.Start()
		defer pub.Close()
	}
	e := event.TurnCompleted{Header: event.Header{At: t0, Desk: "main", ID: "trigger:k001:answered"}, Session: "s1", Turn: 3,
		Trigger: "k001", Model: "gpt", Provider: "openai", InputTokens: 1200, OutputTokens: 300, DurationMS: 1500}
	b.ReportAllocs()
	for b.Loop() {
		event.Publish(bus, e)
	}
}

// BenchmarkPublishKeptInTheOutbox is what a turn pays for each event it
// announces with NATS events on: the outbox's write, in its goroutine,
// and no fsync (the sender's, off the turn, covers what came meanwhile).
func BenchmarkPublishKeptInTheOutbox(b *testing.B) { benchmarkPublish(b, true) }

// BenchmarkPublishWithoutNATS is the same publication without NATS
// events, for comparison.
func BenchmarkPublishWithoutNATS(b *testing.B) { benchmarkPublish(b, false) }
