package broadcast_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/broadcast"
)

// TestWaitHoldsAtOnce: a condition that already holds returns without a
// Notify.
func TestWaitHoldsAtOnce(t *testing.T) {
	var s broadcast.Signal
	calls := 0
	if err := s.Wait(context.Background(), func() bool { calls++; return true }); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if calls != 1 {
		t.Fatalf("cond tested %d times, want 1", calls)
	}
}

// TestNotifyWakesEveryWaiter: each waiter tests its condition again after
// each Notify and returns once it holds; a Notify with no waiter is a
// no-op.
func TestNotifyWakesEveryWaiter(t *testing.T) {
	var s broadcast.Signal
	s.Notify() // nobody waits yet
	var mu sync.Mutex
	value := 0
	get := func() int { mu.Lock(); defer mu.Unlock(); return value }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const waiters = 3
	errs := make(chan error, waiters)
	tested := make(chan struct{}, 100)
	for range waiters {
		go func() {
			errs <- s.Wait(ctx, func() bool { tested <- struct{}{}; return get() >= 2 })
		}()
	}
	for range waiters { // each has tested once and waits
		<-tested
	}
	for _, v := range []int{1, 2} {
		mu.Lock()
		value = v
		mu.Unlock()
		s.Notify()
	}
	for range waiters {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("Wait = %v, want nil", err)
			}
		case <-ctx.Done():
			t.Fatal("a waiter was not woken by Notify")
		}
	}
}

// TestWaitEndsWithItsContext: a condition that never holds returns the
// context's error when it ends.
func TestWaitEndsWithItsContext(t *testing.T) {
	var s broadcast.Signal
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	tested := make(chan struct{}, 1)
	go func() {
		errs <- s.Wait(ctx, func() bool {
			select {
			case tested <- struct{}{}:
			default:
			}
			return false
		})
	}()
	<-tested
	s.Notify()
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}
