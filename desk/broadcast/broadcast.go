// Package broadcast wakes every goroutine that waits for a change of some
// state: the state's owner calls Signal.Notify after each change, and a
// waiter calls Signal.Wait with the condition it waits for, which is
// tested again after every change until it holds.
package broadcast

import (
	"context"
	"sync"
)

// Signal is the change notice of one piece of state. The zero Signal is
// ready to use; a Signal must not be copied after its first use. Its lock
// is its own, so Notify may be called with the state's lock held.
type Signal struct {
	mu sync.Mutex
	// ch is closed by the next Notify; nil while no Wait holds it.
	ch chan struct{}
}

// Notify wakes every Wait in progress to test its condition again.
func (s *Signal) Notify() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// next returns the channel that the next Notify closes.
func (s *Signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Wait returns nil once cond holds, testing it now and after each Notify,
// or ctx's error when ctx ends first. A change notified while cond is
// being tested is not missed: the channel that change closes is taken
// before the test.
func (s *Signal) Wait(ctx context.Context, cond func() bool) error {
	for {
		changed := s.next()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
