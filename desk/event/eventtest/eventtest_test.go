package eventtest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
)

// recorder is a testing.TB that records failures instead of reporting
// them, so that a test can check that a helper fails when it must. Fatal
// ends the calling goroutine, as testing's does.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) failed() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.failures, "\n")
}

// run calls f on a goroutine of its own (Fatal ends it) and returns what
// r recorded meanwhile.
func (r *recorder) run(f func()) string {
	r.mu.Lock()
	r.failures = nil
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	return r.failed()
}

func head(sec int) event.Header {
	return event.Header{At: time.Date(2026, 3, 2, 4, 30, sec, 0, time.UTC), Desk: "main"}
}

func newBus(t *testing.T) *event.Bus {
	b := event.New()
	t.Cleanup(b.Close)
	return b
}

func TestNextKeepsAPlacePerType(t *testing.T) {
	bus := newBus(t)
	w := eventtest.WatchAll(t, bus)
	event.Publish(bus, event.TurnCompleted{Header: head(1), Turn: 1})
	event.Publish(bus, event.TurnStarted{Header: head(2), Turn: 2})
	event.Publish(bus, event.TurnCompleted{Header: head(3), Turn: 3})
	// Waiting for the turn.started first must not lose the turn.completed
	// that came before it.
	if e := eventtest.Next[event.TurnStarted](w); e.Turn != 2 {
		t.Errorf("Next turn.started = turn %d, want 2", e.Turn)
	}
	for _, want := range []int{1, 3} {
		if e := eventtest.Next[event.TurnCompleted](w); e.Turn != want {
			t.Errorf("Next turn.completed = turn %d, want %d", e.Turn, want)
		}
	}
	if e := eventtest.Next[event.Event](w); e.Topic() != "turn.completed" {
		t.Errorf("Next event = %s, want the first one published", e.Topic())
	}
}

func TestNextWhereSkipsWhatItRefuses(t *testing.T) {
	bus := newBus(t)
	w := eventtest.Watch[event.TurnCompleted](t, bus)
	for turn := 1; turn <= 3; turn++ {
		event.Publish(bus, event.TurnCompleted{Header: head(turn), Turn: turn})
	}
	if e := eventtest.NextWhere(w, func(e event.TurnCompleted) bool { return e.Turn == 2 }); e.Turn != 2 {
		t.Errorf("NextWhere = turn %d, want 2", e.Turn)
	}
	if e := eventtest.Next[event.TurnCompleted](w); e.Turn != 3 {
		t.Errorf("Next after NextWhere = turn %d, want 3 (1 was passed over)", e.Turn)
	}
}

func TestWatchSeesOnlyItsType(t *testing.T) {
	bus := newBus(t)
	w := eventtest.Watch[event.TurnStarted](t, bus)
	event.Publish(bus, event.TurnFailed{Header: head(1)})
	event.Publish(bus, event.TurnStarted{Header: head(2), Turn: 7})
	eventtest.Next[event.TurnStarted](w)
	if evs := w.Events(); len(evs) != 1 {
		t.Errorf("a turn.started watcher holds %d events, want 1: %v", len(evs), evs)
	}
}

// TestNextFailsSayingWhatCame: under synctest the deadline passes as soon
// as every goroutine is blocked.
func TestNextFailsSayingWhatCame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newBus(t)
		r := &recorder{TB: t}
		w := eventtest.WatchAll(r, bus)
		event.Publish(bus, event.TurnFailed{Header: head(1), Error: "model down"})
		got := r.run(func() {
			eventtest.Next[event.TurnCompleted](w)
			r.Errorf("Next returned without a turn.completed")
		})
		for _, want := range []string{"no turn.completed within 10s", "turn.failed", "model down"} {
			if !strings.Contains(got, want) {
				t.Errorf("failure %q lacks %q", got, want)
			}
		}
	})
}

func TestExpectNone(t *testing.T) {
	bus := newBus(t)
	r := &recorder{TB: t}
	w := eventtest.WatchAll(r, bus)
	event.Publish(bus, event.TurnStarted{Header: head(1), Turn: 1})
	event.Publish(bus, event.TurnCompleted{Header: head(2), Turn: 1})
	eventtest.Next[event.TurnCompleted](w) // the barrier: the turn.started is in
	if got := r.run(func() { eventtest.ExpectNone[event.TurnFailed](w) }); got != "" {
		t.Errorf("ExpectNone with no turn.failed failed: %s", got)
	}
	if got := r.run(func() { eventtest.ExpectNone[event.TurnStarted](w) }); !strings.Contains(got, "unexpected turn.started") {
		t.Errorf("ExpectNone with a turn.started = %q, want a failure naming it", got)
	}
}

func TestRestAfterClose(t *testing.T) {
	bus := newBus(t)
	w := eventtest.Watch[event.TurnStarted](t, bus)
	for turn := 1; turn <= 3; turn++ {
		event.Publish(bus, event.TurnStarted{Header: head(turn), Turn: turn})
	}
	eventtest.Next[event.TurnStarted](w)
	bus.Close()
	rest := eventtest.Rest[event.TurnStarted](w)
	if len(rest) != 2 || rest[0].Turn != 2 || rest[1].Turn != 3 {
		t.Errorf("Rest = %+v, want turns 2 and 3", rest)
	}
	if again := eventtest.Rest[event.TurnStarted](w); len(again) != 0 {
		t.Errorf("Rest again = %+v, want nothing", again)
	}
}

func TestChangedIsClosedByTheNextEvent(t *testing.T) {
	bus := newBus(t)
	w := eventtest.WatchAll(t, bus)
	changed := w.Changed()
	select {
	case <-changed:
		t.Fatal("Changed is closed before any event")
	default:
	}
	event.Publish(bus, event.TurnStarted{Header: head(1)})
	select {
	case <-changed:
	case <-time.After(eventtest.Timeout):
		t.Fatal("Changed was not closed by an event")
	}
}
