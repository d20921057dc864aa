package triggers

import (
	"errors"
	"sync"
)

// ErrQueueFull is returned by Push when the queue holds its limit.
var ErrQueueFull = errors.New("queue full")

// Queue is one desk's queue of triggers waiting for a turn: manual triggers
// go first, then market, then scheduled ones, each kind in arrival order.
// It is safe for concurrent use.
type Queue struct {
	mu    sync.Mutex
	items []Trigger
	limit int
	ready chan struct{}
}

// NewQueue returns an empty queue that holds at most limit triggers.
func NewQueue(limit int) *Queue {
	return &Queue{limit: limit, ready: make(chan struct{}, 1)}
}

// Push adds t, or returns ErrQueueFull.
func (q *Queue) Push(t Trigger) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) >= q.limit {
		return ErrQueueFull
	}
	q.items = append(q.items, t)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return nil
}

// Pop removes and returns the trigger to run next.
func (q *Queue) Pop() (Trigger, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	best := -1
	for i, t := range q.items {
		if best < 0 || rank(t.Kind) < rank(q.items[best].Kind) {
			best = i
		}
	}
	if best < 0 {
		return Trigger{}, false
	}
	t := q.items[best]
	q.items = append(q.items[:best], q.items[best+1:]...)
	if len(q.items) > 0 {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
	return t, true
}

// Ready delivers a signal when the queue may have a trigger to Pop.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Len returns how many triggers wait.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func rank(k Kind) int {
	switch k {
	case Manual:
		return 0
	case Market:
		return 1
	default:
		return 2
	}
}
