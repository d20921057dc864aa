package approval

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/router"
)

// Who decides when no operator did, and why.
const (
	// ByDeskd is the Decision.By of an expiry, of a call made on a paused
	// desk, and of the calls denied because deskd stops.
	ByDeskd = "deskd"
	// reasonPaused is why a call made on a paused desk is denied.
	reasonPaused = "the desk is paused"
	// reasonStopping is why the calls that wait when deskd stops are denied.
	reasonStopping = "deskd is stopping"
	// resultStopped is what the model hears of a call whose turn ended
	// before anyone decided on it.
	resultStopped = "not decided: the turn was stopped"
	// reasonStopped is the Reason of the approval.decided event of such a
	// call (it is not a decision: the session keeps none).
	reasonStopped = "the turn was stopped"
)

// Options are what a Queue needs.
type Options struct {
	// Clock is deskd's clock: requests, decisions and expiries are on it.
	Clock clock.Clock
	// Bus is where approval.requested and approval.decided are announced,
	// and where the queue hears of paused desks (desk.paused).
	Bus *event.Bus
}

// Queue holds the calls of every desk that wait for an operator's
// decision. Its Gate makes a desk's approved tools wait in it; Decide,
// DenyAll and a desk's pause end the wait. It is safe for concurrent use.
type Queue struct {
	clock clock.Clock
	bus   *event.Bus
	stop  func() // ends the desk.paused subscription

	mu      sync.Mutex
	waiting map[string]*waiter  // by id
	used    map[string]struct{} // every id handed out in this run
	seq     uint64              // order of arrival, for Pending
	closed  bool
}

// waiter is one call that waits. Its decision is set, and done closed,
// exactly once, by whoever takes it out of the queue's waiting map.
type waiter struct {
	p        Pending
	seq      uint64
	done     chan struct{}
	decision router.Decision
	// paused says whether the call's desk is paused: an approval that
	// comes after a pause, before the queue heard of it, is a denial.
	paused func() bool
}

// New returns an empty queue that denies a desk's waiting calls when the
// desk is paused (By: who paused it). Close it to stop that.
func New(o Options) *Queue {
	q := &Queue{
		clock:   o.Clock,
		bus:     o.Bus,
		waiting: map[string]*waiter{},
		used:    map[string]struct{}{},
	}
	q.stop = event.Subscribe(o.Bus, func(e event.DeskPaused) {
		reason := "the desk was paused"
		if e.Reason != "" {
			reason += ": " + e.Reason
		}
		q.DenyAll(e.Desk, e.By, reason)
	})
	return q
}

// Gate returns the gate of a desk's tools that need approval: a call waits
// until an operator decides on it, for at most within; paused (nil: never)
// says whether the desk is paused, in which case the call is denied at
// once. A call whose ctx ends first does not run, and has no decision.
func (q *Queue) Gate(within time.Duration, paused func() bool) router.Gate {
	if paused == nil {
		paused = func() bool { return false }
	}
	return func(ctx context.Context, call router.GateCall) router.Verdict {
		return q.wait(ctx, call, within, paused)
	}
}

// wait is a Gate's work: enqueue the call, announce it, and wait for its
// decision, its expiry or the end of ctx.
func (q *Queue) wait(ctx context.Context, call router.GateCall, within time.Duration, paused func() bool) router.Verdict {
	if paused() {
		return verdict(q.decideNow(call, ByDeskd, reasonPaused), within)
	}
	w, ok := q.enqueue(call, within, paused)
	if !ok {
		return verdict(q.decideNow(call, ByDeskd, reasonStopping), within)
	}
	q.announce(w.p)
	// The desk may have been paused between the first look and enqueue,
	// its desk.paused event delivered before the call was in the queue.
	if paused() {
		q.resolve(w.p.Desk, w.p.ID, router.DecisionDenied, ByDeskd, reasonPaused)
	}
	timer := q.clock.NewTimer(within)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C():
		q.resolve(w.p.Desk, w.p.ID, router.DecisionExpired, ByDeskd, "")
	case <-ctx.Done():
		if q.withdraw(w) {
			return router.Verdict{Outcome: router.OutcomeRefused, Result: resultStopped}
		}
	}
	<-w.done
	return verdict(w.decision, within)
}

// enqueue adds call to the waiting calls under a fresh id; false when the
// queue is closed.
func (q *Queue) enqueue(call router.GateCall, within time.Duration, paused func() bool) (*waiter, bool) {
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false
	}
	q.seq++
	w := &waiter{
		p: Pending{
			ID:          q.freshID(),
			Desk:        call.Desk,
			Session:     call.Session,
			Trigger:     call.Trigger,
			Call:        call.ID,
			Tool:        call.Tool,
			Arguments:   call.Arguments,
			RequestedAt: now,
			ExpiresAt:   now.Add(within),
		},
		seq:    q.seq,
		done:   make(chan struct{}),
		paused: paused,
	}
	q.waiting[w.p.ID] = w
	return w, true
}

// freshID returns 8 lowercase hex digits not handed out before in this
// run. The caller holds q.mu.
func (q *Queue) freshID() string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		id := hex.EncodeToString(b[:])
		if _, taken := q.used[id]; !taken {
			q.used[id] = struct{}{}
			return id
		}
	}
}

// announce publishes approval.requested for p.
func (q *Queue) announce(p Pending) {
	event.Publish(q.bus, event.ApprovalRequested{
		Header:    event.Header{At: p.RequestedAt, Desk: p.Desk},
		ID:        p.ID,
		Trigger:   p.Trigger,
		Call:      p.Call,
		Tool:      p.Tool,
		Arguments: p.Arguments,
		ExpiresAt: p.ExpiresAt,
	})
}

// decideNow denies a call that never waited (its desk is paused, deskd
// stops), under a fresh id, and announces the decision.
func (q *Queue) decideNow(call router.GateCall, by, reason string) router.Decision {
	now := q.clock.Now()
	q.mu.Lock()
	id := q.freshID()
	q.mu.Unlock()
	d := router.Decision{
		ID: id, Call: call.ID, Tool: call.Tool, Arguments: call.Arguments,
		Outcome: router.DecisionDenied, By: by, Reason: reason,
		RequestedAt: now, DecidedAt: now,
	}
	q.announceDecision(call.Desk, call.Trigger, d)
	return d
}

// resolve takes the call id of desk out of the queue with the decision
// outcome, announces the decision and wakes its gate. It returns false,
// and does nothing, when no such call waits.
func (q *Queue) resolve(desk, id, outcome, by, reason string) (router.Decision, bool) {
	now := q.clock.Now()
	q.mu.Lock()
	w, ok := q.waiting[id]
	if !ok || w.p.Desk != desk {
		q.mu.Unlock()
		return router.Decision{}, false
	}
	delete(q.waiting, id)
	if outcome == router.DecisionApproved && w.paused != nil && w.paused() {
		// Paused since the call came, and desk.paused not yet heard: no
		// approval runs a call on a paused desk.
		outcome, by, reason = router.DecisionDenied, ByDeskd, reasonPaused+" (the approval by "+by+" came after the pause)"
	}
	w.decision = router.Decision{
		ID: id, Call: w.p.Call, Tool: w.p.Tool, Arguments: w.p.Arguments,
		Outcome: outcome, By: by, Reason: reason,
		RequestedAt: w.p.RequestedAt, DecidedAt: now,
	}
	d := w.decision
	q.mu.Unlock()
	// Announced before the gate wakes: approval.decided comes before
	// whatever the call's turn publishes next (its tool call, its answer).
	q.announceDecision(desk, w.p.Trigger, d)
	close(w.done)
	return d, true
}

// withdraw takes w out of the queue without a decision (its turn ended)
// and announces that; false when a decision came first.
func (q *Queue) withdraw(w *waiter) bool {
	now := q.clock.Now()
	q.mu.Lock()
	if _, ok := q.waiting[w.p.ID]; !ok {
		q.mu.Unlock()
		return false
	}
	delete(q.waiting, w.p.ID)
	q.mu.Unlock()
	event.Publish(q.bus, event.ApprovalDecided{
		Header:   event.Header{At: now, Desk: w.p.Desk},
		ID:       w.p.ID,
		Trigger:  w.p.Trigger,
		Call:     w.p.Call,
		Tool:     w.p.Tool,
		Outcome:  router.OutcomeRefused,
		By:       ByDeskd,
		Reason:   reasonStopped,
		WaitedMS: now.Sub(w.p.RequestedAt).Milliseconds(),
	})
	return true
}

// announceDecision publishes approval.decided for d, a decision on a call
// of desk.
func (q *Queue) announceDecision(desk, trigger string, d router.Decision) {
	event.Publish(q.bus, event.ApprovalDecided{
		Header:   event.Header{At: d.DecidedAt, Desk: desk},
		ID:       d.ID,
		Trigger:  trigger,
		Call:     d.Call,
		Tool:     d.Tool,
		Outcome:  d.Outcome,
		By:       d.By,
		Reason:   d.Reason,
		WaitedMS: d.DecidedAt.Sub(d.RequestedAt).Milliseconds(),
	})
}

// verdict is what the router hears of decision d on a call that waited
// for at most within.
func verdict(d router.Decision, within time.Duration) router.Verdict {
	v := router.Verdict{Decision: &d}
	switch d.Outcome {
	case router.DecisionApproved:
		v.Run = true
	case router.DecisionExpired:
		v.Outcome = router.OutcomeExpired
		v.Result = fmt.Sprintf("expired: no operator decided on it within %s. The call did not run.", within)
	default:
		v.Outcome = router.OutcomeDenied
		who := "denied by " + d.By
		if d.Reason != "" {
			who += ": " + d.Reason
		}
		v.Result = who + ". The call did not run; do not retry it unless the operator asks."
	}
	return v
}

// Decide approves or denies the call id that waits on desk, as by (the
// operator), for reason (may be empty). The call's gate returns at once:
// an approved call runs. ErrUnknown (wrapped, naming desk and id) when no
// such call waits: it never did, or it was decided or expired already.
func (q *Queue) Decide(desk, id string, approve bool, by, reason string) (router.Decision, error) {
	outcome := router.DecisionDenied
	if approve {
		outcome = router.DecisionApproved
	}
	d, ok := q.resolve(desk, id, outcome, by, reason)
	if !ok {
		return router.Decision{}, fmt.Errorf("decide on call %s of desk %s: %w", id, desk, ErrUnknown)
	}
	return d, nil
}

// Pending returns the calls that wait on desk ("" for every desk), oldest
// first.
func (q *Queue) Pending(desk string) []Pending {
	q.mu.Lock()
	ws := make([]*waiter, 0, len(q.waiting))
	for _, w := range q.waiting {
		if desk == "" || w.p.Desk == desk {
			ws = append(ws, w)
		}
	}
	q.mu.Unlock()
	slices.SortFunc(ws, func(a, b *waiter) int {
		if c := a.p.RequestedAt.Compare(b.p.RequestedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := make([]Pending, len(ws))
	for i, w := range ws {
		out[i] = w.p
	}
	return out
}

// DenyAll denies every call that waits on desk ("" for every desk), as by
// for reason, and returns how many it denied.
func (q *Queue) DenyAll(desk, by, reason string) int {
	n := 0
	for _, p := range q.Pending(desk) {
		if _, ok := q.resolve(p.Desk, p.ID, router.DecisionDenied, by, reason); ok {
			n++
		}
	}
	return n
}

// Close stops listening for paused desks and denies every call that
// waits (By "deskd", Reason "deskd is stopping"); calls made later are
// denied at once the same way.
func (q *Queue) Close() {
	q.stop()
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.DenyAll("", ByDeskd, reasonStopping)
}
