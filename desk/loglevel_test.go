package desk_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// TestLogEventsKeepTheLevelOfTheirPublication: an event published while
// the level is above its own is not logged, even when the log's writes
// are behind and the level has come down again by the time its turn
// comes (cmd/deskd TestE2EReloadSIGHUPAndLogLevel saw such a line under
// load). The test holds the log's first write until both level changes
// are made.
func TestLogEventsKeepTheLevelOfTheirPublication(t *testing.T) {
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	out := make(lines) // unbuffered: each write waits for the test to read it
	log, level, err := desk.NewLogger(config.Log{Level: "info", Format: "json"}, time.UTC, out, clock.NewFake(at))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	b := event.New()
	defer b.Close()
	stop := desk.LogEvents(b, log, time.UTC, level)
	defer stop()
	defer func() { // read what is left, so that Close does not wait on a held write
		go func() {
			for {
				select {
				case <-out:
				case <-done:
					return
				}
			}
		}()
	}()

	h := event.Header{At: at, Desk: "main"}
	event.Publish(b, event.TurnFailed{Header: h, Trigger: "held", Error: "boom"}) // warn: logged, its write held
	level.Set(zerolog.WarnLevel)
	event.Publish(b, event.TurnCompleted{Header: h, Trigger: "quiet"}) // info, published at warn
	level.Set(zerolog.InfoLevel)
	event.Publish(b, event.TurnCompleted{Header: h, Trigger: "loud"}) // info, published at info

	for _, want := range []string{"held", "loud"} {
		if line := out.next(t); line["trigger"] != want {
			t.Fatalf("log line %v, want the one of trigger %s (quiet's turn came at level warn)", line, want)
		}
	}
}
