package desk_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// lineCount is a log writer that counts its lines on a channel.
type lineCount chan struct{}

func (c lineCount) Write(p []byte) (int, error) { c <- struct{}{}; return len(p), nil }

// BenchmarkLogEvents is one turn.completed through the log's subscriber
// (LogEvents) to its JSON line, the bus's delivery included.
func BenchmarkLogEvents(b *testing.B) {
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	lines := make(lineCount, 1024)
	log, _, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, time.UTC, lines, clock.NewFake(at))
	if err != nil {
		b.Fatal(err)
	}
	bus := event.New()
	defer bus.Close()
	defer desk.LogEvents(bus, log, time.UTC, nil)()
	e := event.TurnCompleted{Header: event.Header{At: at, Desk: "main"}, Session: "s-1", Turn: 3, Trigger: "t-1",
		Model: "gpt-4o", Provider: "openai", InputTokens: 812, OutputTokens: 20, DurationMS: 1234}
	b.ReportAllocs()
	for b.Loop() {
		event.Publish(bus, e)
		<-lines
	}
}
