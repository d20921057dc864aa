package triggers

// Acknowledging an interrupted trigger: the operator says they have seen
// it (and checked what its model call may have done). The ledger keeps the
// acknowledgement as a record of its own, of state acknowledged, appended
// like any other: the trigger stays interrupted, with its Ack, and leaves
// Interrupted, across restarts. A compacted ledger keeps the trigger's one
// record in state acknowledged, with the Ack and the whole history.

import (
	"errors"
	"fmt"
	"time"
)

// Ack is an acknowledgement of an interrupted trigger.
type Ack struct {
	// By names who acknowledged it.
	By string `json:"by"`
	// At is when, on deskd's clock.
	At time.Time `json:"at"`
	// Note is what they said; may be empty.
	Note string `json:"note"`
}

// Errors of Acknowledge.
var (
	// ErrUnknownTrigger: the ledger has no trigger of that id.
	ErrUnknownTrigger = errors.New("no such trigger")
	// ErrNotInterrupted: the trigger is not interrupted; only an
	// interrupted one can be acknowledged.
	ErrNotInterrupted = errors.New("only an interrupted trigger can be acknowledged")
)

// Acknowledge records a's acknowledgement of interrupted trigger id
// (durably: fsynced) and returns its Item, with its Ack. When id was
// acknowledged before, the first acknowledgement stands: nothing is
// written, and already is true. A trigger the ledger does not know is
// ErrUnknownTrigger; one that is not interrupted, ErrNotInterrupted.
func (l *Ledger) Acknowledge(id string, a Ack) (it Item, already bool, err error) {
	l.ackMu.Lock()
	defer l.ackMu.Unlock()
	it, ok := l.lookup(id)
	switch {
	case !ok:
		return it, false, fmt.Errorf("acknowledge trigger %q: %w", id, ErrUnknownTrigger)
	case it.Ack != nil:
		return it, true, nil
	case it.State != StateInterrupted:
		return it, false, fmt.Errorf("acknowledge trigger %q: it is %s: %w", id, it.State, ErrNotInterrupted)
	}
	if err := l.Append(Record{At: a.At, ID: id, State: StateAcknowledged, Ack: &a}); err != nil {
		return it, false, fmt.Errorf("acknowledge trigger %q: %w", id, err)
	}
	it, _ = l.lookup(id)
	return it, false, nil
}

// foldAck applies r, a record of state acknowledged, to e: the trigger
// stays interrupted (only an interrupted one is acknowledged), and the
// first Ack stands. A record that carries the trigger is a compacted
// ledger's, standing for its whole history: that is folded first.
func foldAck(e *Item, r *Record) {
	if r.Trigger != nil {
		whole := *r
		whole.State, whole.Ack = StateInterrupted, nil
		foldOwn(e, &whole)
	}
	e.State, e.Updated = StateInterrupted, r.At
	if e.Ack == nil && r.Ack != nil {
		a := *r.Ack
		e.Ack = &a
	}
}

// kept reports whether the ledger keeps its whole Item in memory: an
// open trigger, or an interrupted one not yet acknowledged.
func (it *Item) kept() bool { return open(it.State) && it.Ack == nil }
