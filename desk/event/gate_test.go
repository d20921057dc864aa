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

// TestSubscribeAllNowSeesWhatIsAnnounced: a SubscribeAllNow function has
// a published event before Publish returns, and a staged one only when it
// is delivered (after the state it reports is recorded), not when it is
// staged; after cancel it has nothing more.
func TestSubscribeAllNowSeesWhatIsAnnounced(t *testing.T) {
	b := event.New()
	defer b.Close()
	var got []int
	cancel := event.SubscribeAllNow(b, func(e event.Event) { got = append(got, e.(event.TurnStarted).Turn) })

	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 1})
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("after Publish returned: %v, want [1]", got)
	}
	deliver := event.Stage(b, event.TurnStarted{Header: at(2), Turn: 2})
	if len(got) != 1 {
		t.Fatalf("a staged event was seen before its delivery: %v", got)
	}
	deliver()
	if len(got) != 2 || got[1] != 2 {
		t.Fatalf("after deliver: %v, want [1 2]", got)
	}
	cancel()
	event.Publish(b, event.TurnStarted{Header: at(3), Turn: 3})
	if len(got) != 2 {
		t.Errorf("after cancel: %v, want nothing more", got)
	}
}
