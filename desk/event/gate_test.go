package event_test

import (
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/desk/event"
)

// TestSubscribeAllIfDecidesAtPublication: keep's verdict is taken when an
// event is published, not when its handler runs: with the handler held
// on its first event, an event published while keep refuses never
// arrives, though keep accepts again before the handler gets to it.
func TestSubscribeAllIfDecidesAtPublication(t *testing.T) {
	b := event.New()
	defer b.Close()
	var accept atomic.Bool
	accept.Store(true)
	release := make(chan struct{})
	got := make(chan int, 10)
	defer event.SubscribeAllIf(b, func(event.Event) bool { return accept.Load() }, func(e event.Event) {
		if e.(event.TurnStarted).Turn == 1 {
			<-release
		}
		got <- e.(event.TurnStarted).Turn
	})()

	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 1}) // kept, its handler held
	accept.Store(false)
	event.Publish(b, event.TurnStarted{Header: at(2), Turn: 2}) // refused when published
	accept.Store(true)
	event.Publish(b, event.TurnStarted{Header: at(3), Turn: 3})
	close(release)

	for _, want := range []int{1, 3} {
		if turn := recv(t, got); turn != want {
			t.Fatalf("handler got turn %d, want %d (turn 2 was published while keep refused)", turn, want)
		}
	}
}
