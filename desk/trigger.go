package desk

import (
	"context"
	"strings"
	"time"

	"github.com/deskd/deskd/triggers"
)

// TriggerStatus is what a desk knows of one trigger: the answer of
// GET /v1/desks/{desk}/triggers/{id}.
type TriggerStatus struct {
	ID     string        `json:"id"`
	Desk   string        `json:"desk"`
	Kind   triggers.Kind `json:"kind,omitempty"`
	Source string        `json:"source,omitempty"`
	Key    string        `json:"key,omitempty"`
	// State is queued, running, answered, failed, interrupted, dropped or
	// missed. A trigger merged into a newer one of the same key takes that
	// one's state, session, turn and reply, and MergedInto names it.
	State triggers.State `json:"state"`
	// ModelCalled is true once the turn was handed to the model, or when
	// a restart found that it may have been (the reason says so).
	ModelCalled bool      `json:"model_called,omitempty"`
	Text        string    `json:"text,omitempty"`
	Merged      int       `json:"merged,omitempty"`
	MergedInto  string    `json:"merged_into,omitempty"`
	Schedule    string    `json:"schedule,omitempty"`
	Slot        time.Time `json:"slot,omitzero"`
	QueuedAt    time.Time `json:"queued_at,omitzero"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
	Session     string    `json:"session,omitempty"`
	Turn        int       `json:"turn,omitempty"`
	Reply       string    `json:"reply,omitempty"`
	// Reason explains a failure, an interruption, a drop or a miss.
	Reason string `json:"reason,omitempty"`
	// Acknowledged is the operator's acknowledgement of an interrupted
	// trigger (Acknowledge); the trigger then leaves Status.Interrupted.
	Acknowledged *triggers.Ack `json:"acknowledged,omitempty"`
	// Position is a queued trigger's place in the desk's queue (1: next).
	Position int `json:"position,omitempty"`
}

// Final reports whether the trigger's state will not change any more.
func (s TriggerStatus) Final() bool { return s.State.Terminal() }

// neverSent reports whether it was interrupted before its request went
// to the model (reasonNeverSent): handed to the router, never to the model.
func neverSent(it triggers.Item) bool {
	return it.State == triggers.StateInterrupted && strings.HasPrefix(it.Reason, neverSentPrefix)
}

// maySent reports whether it is a trigger a restart interrupted as one
// the model saw or may have seen, whose sent record the crash may have
// taken (or came before: the record is written as the request goes out,
// and a model that makes no HTTP request has it written once it answers).
func maySent(it triggers.Item) bool {
	return it.State == triggers.StateInterrupted && (strings.HasPrefix(it.Reason, maySentPrefix) || strings.HasPrefix(it.Reason, sentPrefix))
}

// statusOf describes own, answered by answer (own itself, or the trigger it
// was merged into).
func statusOf(desk string, own, answer triggers.Item) TriggerStatus {
	s := TriggerStatus{
		ID: own.Trigger.ID, Desk: desk, Kind: own.Trigger.Kind, Source: own.Trigger.Source, Key: own.Trigger.Key,
		State: answer.State, Text: own.Trigger.Text, Merged: answer.Trigger.Merged, Schedule: own.Schedule, Slot: own.Slot,
		QueuedAt: own.QueuedAt, StartedAt: answer.StartedAt, UpdatedAt: answer.Updated,
		Session: answer.Session, Turn: answer.Turn, Reply: answer.Reply, Reason: answer.Reason,
		ModelCalled: (!answer.SentAt.IsZero() || maySent(answer)) && !neverSent(answer), Acknowledged: own.Ack,
	}
	if own.Trigger.ID != answer.Trigger.ID {
		s.MergedInto = answer.Trigger.ID
	}
	switch s.State {
	case triggers.StateSent:
		s.State = triggers.StateRunning
	case triggers.StateMerged: // the trigger it was merged into is gone
		s.MergedInto = own.MergedInto
	}
	return s
}

// Trigger returns what the desk's ledger knows of trigger id.
func (d *Desk) Trigger(id string) (TriggerStatus, bool) {
	own, answer, ok := d.ledger.Resolve(id)
	if !ok {
		return TriggerStatus{}, false
	}
	s := statusOf(d.o.Name, own, answer)
	if s.State == triggers.StateQueued {
		if r := d.runningTurn(); r != nil && r.Trigger == answer.Trigger.ID {
			// Its turn began, and the ledger does not say so yet: the
			// sent record is written as the request goes out (turn).
			s.State, s.StartedAt, s.ModelCalled = triggers.StateRunning, r.Since, r.Phase == PhaseModel
			return s, true
		}
		s.Position = d.queuePosition(answer.Trigger.ID)
	}
	return s, true
}

// runningTurn returns a copy of the running turn, or nil.
func (d *Desk) runningTurn() *Running {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running == nil {
		return nil
	}
	r := *d.running
	return &r
}

// WaitTrigger waits until trigger id reaches a final state, ctx is done
// or max has passed on the desk's clock, and returns what is known then.
func (d *Desk) WaitTrigger(ctx context.Context, id string, max time.Duration) (TriggerStatus, bool) {
	timer := d.o.Clock.NewTimer(max)
	defer timer.Stop()
	for {
		changed := d.ledger.Changed()
		s, ok := d.Trigger(id)
		if !ok || s.Final() {
			return s, ok
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		case <-timer.C():
		case <-d.done:
		}
		// Read again: a turn that began meanwhile changed no ledger record
		// (its sent record comes as the request goes out), yet it runs.
		return d.Trigger(id)
	}
}
