package event_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
)

func at(sec int) event.Header {
	return event.Header{At: time.Date(2026, 3, 1, 0, 0, sec, 0, time.UTC), Desk: "main"}
}

// recv waits for one value or fails the test at the deadline.
func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		panic("unreachable")
	}
}

func TestSubscribeGetsOnlyItsTypeInOrder(t *testing.T) {
	b := event.New()
	defer b.Close()
	got := make(chan event.TurnStarted, 10)
	defer event.Subscribe(b, func(e event.TurnStarted) { got <- e })()

	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 1})
	event.Publish(b, event.TurnFailed{Header: at(2), Turn: 99})
	event.Publish(b, event.TurnStarted{Header: at(3), Turn: 2})

	for want := 1; want <= 2; want++ {
		if e := recv(t, got); e.Turn != want {
			t.Fatalf("turn.started #%d carried turn %d", want, e.Turn)
		}
	}
	b.Close()
	if len(got) != 0 {
		t.Fatalf("a turn.failed reached a turn.started subscriber: %+v", <-got)
	}
}

func TestSubscribeAllSeesEveryTopic(t *testing.T) {
	b := event.New()
	defer b.Close()
	got := make(chan string, 10)
	defer event.SubscribeAll(b, func(e event.Event) { got <- e.Topic() + "/" + e.Head().Desk })()
	event.Publish(b, event.DeskStarted{Header: at(1)})
	event.Publish(b, event.SessionStarted{Header: at(2), Reason: "first"})
	for _, want := range []string{"desk.started/main", "session.started/main"} {
		if g := recv(t, got); g != want {
			t.Fatalf("got %q, want %q", g, want)
		}
	}
}

// A handler that publishes would deadlock on EventBus's own lock if handlers
// ran inside EventBus.Publish.
func TestHandlerMayPublish(t *testing.T) {
	b := event.New()
	defer b.Close()
	done := make(chan event.TurnCompleted, 1)
	defer event.Subscribe(b, func(e event.TurnStarted) {
		event.Publish(b, event.TurnCompleted{Header: e.Header, Turn: e.Turn})
	})()
	defer event.Subscribe(b, func(e event.TurnCompleted) { done <- e })()
	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 7})
	if e := recv(t, done); e.Turn != 7 {
		t.Fatalf("turn.completed carried turn %d, want 7", e.Turn)
	}
}

func TestPanickingHandlerIsRecoveredAndOthersGoOn(t *testing.T) {
	b := event.New()
	defer b.Close()
	got := make(chan int, 2)
	defer event.Subscribe(b, func(e event.TurnStarted) {
		if e.Turn == 1 {
			panic("boom")
		}
		got <- e.Turn
	})()
	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 1})
	event.Publish(b, event.TurnStarted{Header: at(2), Turn: 2})
	if n := recv(t, got); n != 2 {
		t.Fatalf("got turn %d after the panic, want 2", n)
	}
	if b.Panics() != 1 {
		t.Fatalf("Panics() = %d, want 1", b.Panics())
	}
}

// Cancelling one of two subscribers of the same type removes that one only
// (EventBus's Unsubscribe would remove the wrong closure).
func TestCancelRemovesOnlyThatSubscriber(t *testing.T) {
	b := event.New()
	first := make(chan int, 4)
	second := make(chan int, 4)
	cancelFirst := event.Subscribe(b, func(e event.TurnStarted) { first <- e.Turn })
	defer event.Subscribe(b, func(e event.TurnStarted) { second <- e.Turn })()
	cancelFirst()
	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 1})
	if n := recv(t, second); n != 1 {
		t.Fatalf("second subscriber got %d", n)
	}
	b.Close()
	if len(first) != 0 {
		t.Fatal("a cancelled subscriber still received an event")
	}
}

func TestCloseDrainsMailboxes(t *testing.T) {
	b := event.New()
	var n int
	event.Subscribe(b, func(event.TurnStarted) { n++ })
	for i := 0; i < 100; i++ {
		event.Publish(b, event.TurnStarted{Header: at(i)})
	}
	b.Close()
	if n != 100 {
		t.Fatalf("delivered %d of 100 events before Close returned", n)
	}
	event.Publish(b, event.TurnStarted{Header: at(1)}) // after Close: ignored, no panic
}

func TestTopicsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, topic := range event.Topics() {
		if seen[topic] {
			t.Errorf("topic %q appears twice", topic)
		}
		seen[topic] = true
	}
	if len(seen) < 20 {
		t.Errorf("catalogue has %d topics, want at least the 20 of DESIGN.md", len(seen))
	}
}

// TestFirstPublishOfATopicDuringAnotherPublish: the first event of a topic
// (which registers the topic with EventBus) while another goroutine
// publishes a known topic must not deadlock. It did: the first took the
// bus's lock and then EventBus's, the other EventBus's and then the bus's.
func TestFirstPublishOfATopicDuringAnotherPublish(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 300 {
			b := event.New()
			cancel := event.SubscribeAll(b, func(event.Event) {})
			event.Publish(b, event.TriggerQueued{Header: at(1)}) // a known topic from here
			stop := make(chan struct{})
			busy := make(chan struct{})
			go func() {
				defer close(busy)
				for {
					select {
					case <-stop:
						return
					default:
						event.Publish(b, event.TriggerQueued{Header: at(2)})
					}
				}
			}()
			event.Publish(b, event.TurnStarted{})
			event.Publish(b, event.TurnCompleted{})
			event.Publish(b, event.DeskStarted{})
			event.Publish(b, event.DeskStopped{})
			close(stop)
			<-busy
			cancel()
			b.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock: publishing a topic for the first time while another goroutine publishes did not return within 30s")
	}
}

// An event nobody exports or subscribes to is not boxed, copied or handed
// to EventBus's reflection: publishing it allocates nothing, even beside a
// subscriber of another topic.
func TestPublishToNobodyAllocatesNothing(t *testing.T) {
	b := event.New()
	defer b.Close()
	defer event.Subscribe(b, func(event.TurnCompleted) {})()
	e := event.TurnStarted{Header: at(1), Turn: 1, Session: "s-1"}
	if n := testing.AllocsPerRun(100, func() { event.Publish(b, e) }); n != 0 {
		t.Fatalf("a publication nobody subscribes to made %v allocations, want 0", n)
	}
	got := make(chan int, 1)
	cancel := event.Export(b, func(e event.Event) { got <- e.(event.TurnStarted).Turn })
	event.Publish(b, e)
	cancel()
	if n := recv(t, got); n != 1 {
		t.Fatalf("the exporter got turn %d, want 1", n)
	}
	event.Publish(b, e) // after its cancel: not exported
	if len(got) != 0 {
		t.Fatal("a cancelled exporter still got an event")
	}
}

// JSON is the topic, then the event's own fields, in one object.
func TestJSONIsTheTopicThenTheFields(t *testing.T) {
	e := event.TurnStarted{Header: event.Header{At: time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC), Desk: "main"}, Session: "s-1", Turn: 3, Trigger: "t-1", Kind: "market"}
	want := `{"topic":"turn.started","at":"2026-03-02T04:30:00Z","desk":"main","session":"s-1","turn":3,"trigger":"t-1","kind":"market"}`
	if got := string(event.JSON(e)); got != want {
		t.Fatalf("JSON = %s\nwant   %s", got, want)
	}
}

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

// TestSubscribeAllIfSurvivesAPanickingKeep: a keep that panics refuses
// the event and is counted, and the publisher goes on.
func TestSubscribeAllIfSurvivesAPanickingKeep(t *testing.T) {
	b := event.New()
	defer b.Close()
	got := make(chan int, 10)
	defer event.SubscribeAllIf(b, func(e event.Event) bool {
		if e.(event.TurnStarted).Turn == 1 {
			panic("keep")
		}
		return true
	}, func(e event.Event) { got <- e.(event.TurnStarted).Turn })()
	event.Publish(b, event.TurnStarted{Header: at(1), Turn: 1})
	event.Publish(b, event.TurnStarted{Header: at(2), Turn: 2})
	if turn := recv(t, got); turn != 2 || b.Panics() != 1 {
		t.Errorf("handler got turn %d with %d panics counted, want turn 2 and 1 panic", turn, b.Panics())
	}
}
