// Package eventtest watches an event.Bus from a test.
//
// Watch or WatchAll subscribes for the rest of the test and keeps what
// arrives. Next waits for the next event of a type, with a deadline, and
// fails the test saying what arrived instead; NextWhere waits for the next
// one a predicate accepts. ExpectNone shows that no event of a type came,
// without sleeping: events reach a watcher in the order they were
// published, so once a later event is in (Next returned it, the bus was
// closed, or synctest.Wait returned) every earlier one is in too. Rest
// returns what is left of a type, for a test that counts copies.
//
// Each event type has its own place in a watcher: Next[A] skips only A
// events, so waiting for an A never loses a B that came first.
package eventtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
)

// Timeout is how long Next and NextWhere wait before they fail the test.
// Under testing/synctest it passes on the bubble's clock, so a missing
// event fails the test at once once every goroutine is blocked.
const Timeout = 10 * time.Second

// Watcher keeps the events of one subscription to a bus. Its methods and
// the functions of this package may be called from the test's goroutine
// only (they fail the test with Fatal); the bus delivers to it on its own.
type Watcher struct {
	tb testing.TB

	mu      sync.Mutex
	events  []event.Event
	next    map[string]int // per topic ("" for every event): the index of the next event to look at
	changed chan struct{}  // closed, and replaced, when an event arrives
}

// Watch subscribes to every E published on bus until the end of the test.
func Watch[E event.Event](tb testing.TB, bus *event.Bus) *Watcher {
	tb.Helper()
	w := newWatcher(tb)
	tb.Cleanup(event.Subscribe(bus, func(e E) { w.add(e) }))
	return w
}

// WatchAll subscribes to every event of every topic published on bus
// until the end of the test.
func WatchAll(tb testing.TB, bus *event.Bus) *Watcher {
	tb.Helper()
	w := newWatcher(tb)
	tb.Cleanup(event.SubscribeAll(bus, w.add))
	return w
}

func newWatcher(tb testing.TB) *Watcher {
	return &Watcher{tb: tb, next: map[string]int{}, changed: make(chan struct{})}
}

func (w *Watcher) add(e event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, e)
	close(w.changed)
	w.changed = make(chan struct{})
}

// Changed returns a channel that is closed when the next event arrives:
// a test that polls something else may wait on it instead of sleeping.
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Events returns every event the watcher has received so far, in order.
func (w *Watcher) Events() []event.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event.Event(nil), w.events...)
}

// Next returns the next E the watcher has not yet returned, waiting for it
// up to Timeout; it fails the test if none comes.
func Next[E event.Event](w *Watcher) E {
	w.tb.Helper()
	return NextWhere(w, func(E) bool { return true })
}

// NextWhere returns the next E that ok accepts, passing over the E events
// before it (they are not returned again), and waits for it up to Timeout.
// If none comes it fails the test, listing every event that came instead.
func NextWhere[E event.Event](w *Watcher, ok func(E) bool) E {
	w.tb.Helper()
	key := topic[E]()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	w.mu.Lock()
	from := w.next[key]
	w.mu.Unlock()
	for {
		w.mu.Lock()
		changed := w.changed
		for i := w.next[key]; i < len(w.events); i++ {
			e, is := w.events[i].(E)
			if !is {
				continue
			}
			w.next[key] = i + 1
			if ok(e) {
				w.mu.Unlock()
				return e
			}
		}
		w.next[key] = len(w.events)
		w.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			w.mu.Lock()
			came := describe(w.events[from:])
			w.mu.Unlock()
			w.tb.Fatalf("no %s within %v; came instead: %s", name(key), Timeout, came)
			var zero E
			return zero
		}
	}
}

// ExpectNone fails the test (without stopping it) if an E has arrived that
// Next has not returned. It looks only at what is in: call it after a
// barrier, such as a later event from Next on a WatchAll watcher, a closed
// bus, or synctest.Wait.
func ExpectNone[E event.Event](w *Watcher) {
	w.tb.Helper()
	if rest := Rest[E](w); len(rest) > 0 {
		evs := make([]event.Event, len(rest))
		for i, e := range rest {
			evs[i] = e
		}
		w.tb.Errorf("unexpected %s: %s", name(topic[E]()), describe(evs))
	}
}

// Rest returns every E that has arrived and that Next has not returned, and
// marks them returned. Close the bus first to be sure that everything
// published has arrived.
func Rest[E event.Event](w *Watcher) []E {
	key := topic[E]()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []E
	for _, ev := range w.events[w.next[key]:] {
		if e, is := ev.(E); is {
			out = append(out, e)
		}
	}
	w.next[key] = len(w.events)
	return out
}

// topic is the key of E's place in a watcher: its topic, or "" when E is
// the Event interface itself (every event).
func topic[E event.Event]() string {
	var zero E
	if any(zero) == nil {
		return ""
	}
	return zero.Topic()
}

func name(key string) string {
	if key == "" {
		return "event"
	}
	return key
}

// describe lists events for a failure message: each one's topic and
// payload, the list cut short past ten.
func describe(evs []event.Event) string {
	if len(evs) == 0 {
		return "nothing"
	}
	var b strings.Builder
	for i, e := range evs {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(evs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %+v", e.Topic(), e)
	}
	return b.String()
}
