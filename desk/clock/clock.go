// Package clock is deskd's one source of time.
//
// Every component reads the time and waits through a Clock, injected from
// cmd/deskd. The production clock is the wall clock, optionally started at
// another instant (deskd run --clock-start) and running at real speed from
// there; tests use Fake, which moves only when told to.
package clock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Clock tells the time and makes timers on that time.
type Clock interface {
	// Now returns the current instant on this clock.
	Now() time.Time
	// NewTimer returns a timer that fires once, after d has passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C delivers the clock's time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was pending.
	Stop() bool
}

// Real returns the wall clock.
func Real() Clock { return offsetClock{} }

// StartingAt returns a clock that reads start now and runs at real speed
// from there. Its timers wait real durations.
func StartingAt(start time.Time) Clock {
	return offsetClock{offset: time.Until(start)}
}

type offsetClock struct{ offset time.Duration }

// Now returns the time in UTC, so that what deskd writes out does not
// depend on the host's zone; trading dates are computed in the configured
// zone from the instant.
func (c offsetClock) Now() time.Time { return time.Now().Add(c.offset).UTC() }

func (c offsetClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Sleep waits for d on c, or until ctx is done, whichever comes first.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Fake is a Clock for tests: it moves only when Advance or Set is called,
// and then fires the timers that have come due, in deadline order.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced whenever a timer is added
}

// NewFake returns a fake clock that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, timers: map[*fakeTimer]struct{}{}, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		return t
	}
	f.timers[t] = struct{}{}
	close(f.changed)
	f.changed = make(chan struct{})
	return t
}

// Advance moves the fake time forward by d and fires the due timers.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the fake time to t (never backwards) and fires the due timers.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.now = t
	}
	for tm := range f.timers {
		if !tm.at.After(f.now) {
			delete(f.timers, tm)
			tm.c <- f.now
		}
	}
}

// Pending reports how many timers are waiting to fire.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitPending blocks until at least n timers are waiting, or ctx is done.
// Tests use it to know that a loop has armed its timer before they Advance.
func (f *Fake) WaitPending(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		have, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitTimerAt blocks until a timer is waiting to fire at exactly at, or
// ctx is done. A loop that sleeps until an instant (a schedule's next
// slot, the day boundary) arms a timer of that deadline: a test waits for
// it, then moves the clock there with Set, knowing the loop will see it.
func (f *Fake) WaitTimerAt(ctx context.Context, at time.Time) error {
	for {
		f.mu.Lock()
		found, changed := false, f.changed
		for t := range f.timers {
			if t.at.Equal(at) {
				found = true
				break
			}
		}
		f.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("no timer armed for %s (%d waiting): %w", at.Format(time.RFC3339), f.Pending(), ctx.Err())
		}
	}
}

type fakeTimer struct {
	clock *Fake
	at    time.Time
	c     chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	_, ok := t.clock.timers[t]
	delete(t.clock.timers, t)
	return ok
}

// The years of --clock-start (UTC), first and last: an instant outside
// them is a typing mistake, and one too far from now cannot be reached as
// an offset of the wall clock (a time.Duration spans about 292 years, and
// time.Until saturates rather than failing: year 1 would start the clock
// in 1734).
const (
	minClockYear = 1970
	maxClockYear = 2199
)

// ParseStart reads --clock-start (deskd run): an RFC3339 instant from 1970 to
// 2199 whose offset from now fits a time.Duration.
func ParseStart(s string, now time.Time) (time.Time, error) {
	start, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--clock-start %q: want RFC3339, such as 2026-03-01T23:59:00+05:30", s)
	}
	if y := start.UTC().Year(); y < minClockYear || y > maxClockYear {
		return time.Time{}, fmt.Errorf("--clock-start %s: out of range: want an instant in the years %d to %d",
			s, minClockYear, maxClockYear)
	}
	if d := start.Sub(now); !now.Add(d).Equal(start) {
		return time.Time{}, fmt.Errorf("--clock-start %s: too far from now (%s) for deskd's clock to reach", s, now.UTC().Format(time.RFC3339))
	}
	return start, nil
}
