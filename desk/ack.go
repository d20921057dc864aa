package desk

import (
	"fmt"
	"strings"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/triggers"
)

// Acknowledge records that by has seen interrupted trigger id (and what
// its model call may have done), with note: durably, in the desk's
// trigger ledger, so that it leaves Status.Interrupted for good. It
// returns the trigger's status, with its acknowledgement, and publishes
// trigger.acknowledged. A trigger acknowledged before keeps its first
// acknowledgement: nothing changes and already is true. A trigger the
// desk does not know is triggers.ErrUnknownTrigger; one that is not
// interrupted, triggers.ErrNotInterrupted.
func (d *Desk) Acknowledge(id, by, note string) (st TriggerStatus, already bool, err error) {
	by, note = strings.TrimSpace(by), strings.TrimSpace(note)
	if by == "" {
		by = "unknown"
	}
	_, already, err = d.ledger.Acknowledge(id, triggers.Ack{By: by, At: d.o.Clock.Now(), Note: note})
	if err != nil {
		return TriggerStatus{}, false, fmt.Errorf("desk %s: %w", d.o.Name, err)
	}
	st, _ = d.Trigger(id)
	if !already {
		event.Publish(d.o.Bus, event.TriggerAcknowledged{Header: d.header(), Trigger: id, By: by, Note: note})
	}
	return st, already, nil
}
