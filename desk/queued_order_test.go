package desk_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

// TestTriggerQueuedComesBeforeItsTurn: an exporter (the NATS outbox, the
// API's event ring) has a trigger's trigger.queued before its
// turn.started, however fast the desk takes it: the event is published
// before the queue lets the desk's loop have the trigger. It was
// published after, and the API's event stream then carried a feed's
// turn.completed before its trigger.queued (cmd/deskd
// TestAuthE2ECredentials, seen once in CI).
func TestTriggerQueuedComesBeforeItsTurn(t *testing.T) {
	var mu sync.Mutex
	queued := map[string]bool{}
	var early []string
	h := desktest.New(t, desktest.Options{Export: func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e := e.(type) {
		case event.TriggerQueued:
			queued[e.Trigger] = true
		case event.TurnStarted:
			if !queued[e.Trigger] {
				early = append(early, e.Trigger)
			}
		}
	}})
	const n = 200
	for i := range n {
		h.Submit(triggers.Trigger{ID: fmt.Sprintf("t%d", i), Kind: triggers.Market, Text: "tick"})
	}
	eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == fmt.Sprintf("t%d", n-1) })
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Errorf("turn.started before trigger.queued for %d of %d triggers (%v)", len(early), n, early[:min(len(early), 5)])
	}
}
