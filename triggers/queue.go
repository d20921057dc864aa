package triggers

import (
	"errors"
	"sync"
)

// ErrQueueFull is returned by Add when the queue holds its limit.
var ErrQueueFull = errors.New("queue full")

// Queue is one desk's queue of triggers waiting for a turn: manual triggers
// go first, then market, then scheduled ones, each kind in arrival order.
// With coalescing on, a market trigger with a key replaces the queued
// market trigger of the same key, in that trigger's place. It is safe for
// concurrent use.
type Queue struct {
	mu       sync.Mutex
	items    []Trigger
	limit    int
	coalesce bool
	ready    chan struct{}
}

// NewQueue returns an empty queue that holds at most limit triggers; with
// coalesce, market triggers of one key replace one another while queued.
func NewQueue(limit int, coalesce bool) *Queue {
	return &Queue{limit: limit, coalesce: coalesce, ready: make(chan struct{}, 1)}
}

// Add queues t. Under the queue's lock and before anything changes, it
// calls commit with the trigger as it will be queued (Merged counted),
// the queued trigger it replaces (nil when none) and the queue's length
// once t is in; commit makes the change durable (and may announce it:
// nobody can take t from the queue before commit returns), and when it
// fails the queue is left as it was and its error is returned. Add
// returns ErrQueueFull, without calling commit, when t would take a new
// place in a full queue.
func (q *Queue) Add(t Trigger, commit func(t Trigger, replaced *Trigger, depth int) error) (Trigger, *Trigger, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.coalesce && t.Kind == Market && t.Key != "" {
		for i, old := range q.items {
			if old.Kind != Market || old.Key != t.Key {
				continue
			}
			t.Merged = old.Merged + 1
			if err := commit(t, &old, len(q.items)); err != nil {
				return t, nil, err
			}
			q.items[i] = t
			q.signal()
			return t, &old, nil
		}
	}
	if len(q.items) >= q.limit {
		return t, nil, ErrQueueFull
	}
	if err := commit(t, nil, len(q.items)+1); err != nil {
		return t, nil, err
	}
	q.items = append(q.items, t)
	q.signal()
	return t, nil, nil
}

// Restore queues t whatever the limit: it is for triggers accepted before
// a restart (or a storage stall), which the queue must hold again. A
// trigger of the same id already queued is not queued twice.
func (q *Queue) Restore(t Trigger) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range q.items {
		if it.ID == t.ID {
			return
		}
	}
	q.items = append(q.items, t)
	q.signal()
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
		q.signal()
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

// Limit returns the queue's limit.
func (q *Queue) Limit() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit
}

// Configure changes the limit and coalescing. Triggers already queued
// stay, even beyond a lower limit.
func (q *Queue) Configure(limit int, coalesce bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limit, q.coalesce = limit, coalesce
}

// Items returns the waiting triggers in the order they will run.
func (q *Queue) Items() []Trigger {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Trigger, 0, len(q.items))
	for r := range 3 {
		for _, t := range q.items {
			if rank(t.Kind) == r {
				out = append(out, t)
			}
		}
	}
	return out
}

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
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
