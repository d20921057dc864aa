package httpapitest

import (
	"fmt"
	"sync"
	"time"

	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/router"
)

// Approvals is an in-memory httpapi.Approvals (deskd's is an
// *approval.Queue): the tool calls that wait, and the decisions made; a
// decided call no longer waits. The zero value has none; its methods are
// safe for the server's handlers and the test at once.
type Approvals struct {
	mu      sync.Mutex
	pending []approval.Pending
	decided []router.Decision
}

var _ httpapi.Approvals = (*Approvals)(nil)

// Add makes ps wait, in order, as the queue does before
// approval.requested.
func (a *Approvals) Add(ps ...approval.Pending) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending = append(a.pending, ps...)
}

// Drop forgets the waiting call id without a decision (it expired
// meanwhile).
func (a *Approvals) Drop(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, p := range a.pending {
		if p.ID == id {
			a.pending = append(a.pending[:i:i], a.pending[i+1:]...)
			return
		}
	}
}

// Decisions returns the decisions made so far, in order.
func (a *Approvals) Decisions() []router.Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]router.Decision(nil), a.decided...)
}

// Pending returns the calls waiting on deskName, or on every desk when it
// is "".
func (a *Approvals) Pending(deskName string) []approval.Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []approval.Pending
	for _, p := range a.pending {
		if deskName == "" || p.Desk == deskName {
			out = append(out, p)
		}
	}
	return out
}

// Decide approves or denies call id waiting on deskName: the decision
// names the call's id, call, tool and arguments, by and reason, and is
// made a second after the call was requested. A call that does not wait
// there is approval.ErrUnknown (wrapped).
func (a *Approvals) Decide(deskName, id string, approve bool, by, reason string) (router.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, p := range a.pending {
		if p.Desk != deskName || p.ID != id {
			continue
		}
		a.pending = append(a.pending[:i:i], a.pending[i+1:]...)
		d := router.Decision{ID: id, Call: p.Call, Tool: p.Tool, Arguments: p.Arguments, Outcome: router.DecisionDenied,
			By: by, Reason: reason, RequestedAt: p.RequestedAt, DecidedAt: p.RequestedAt.Add(time.Second)}
		if approve {
			d.Outcome = router.DecisionApproved
		}
		a.decided = append(a.decided, d)
		return d, nil
	}
	return router.Decision{}, fmt.Errorf("decide on call %s of desk %s: %w", id, deskName, approval.ErrUnknown)
}
