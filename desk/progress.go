package desk

import (
	"context"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/triggers"
)

// KeeperProgress shows a rollover step the keeper reports in the desk's
// status: the running entry's phase (of the turn that rolls over lazily,
// or of the rollover outside a turn) and since when. It is the desk's
// keeper's Options.Progress; a step's end changes nothing, the next step
// or phase replaces it.
func (d *Desk) KeeperProgress(p keeper.Progress) {
	if p.State != event.ProgressStarted {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running != nil {
		d.running.Phase, d.running.PhaseSince = Phase(p.Phase), p.At
	}
}

// rollOver runs a rollover outside a turn, showing the desk rolling_over
// meanwhile, and the new session once it is done.
func (d *Desk) rollOver(ctx context.Context, reason event.SessionReason) (string, error) {
	now := d.o.Clock.Now()
	d.setRunning(&Running{Kind: KindRollover, Since: now, Phase: PhasePreparing, PhaseSince: now})
	defer d.setRunning(nil)
	defer d.look()
	return d.o.Keeper.RollOver(ctx, reason)
}

// queuePosition is trigger id's place in the queue (1: next), 0 when it is
// not queued.
func (d *Desk) queuePosition(id string) int {
	for i, t := range d.queue.Items() {
		if t.ID == id {
			return i + 1
		}
	}
	return 0
}

// TriggerProgress is where a trigger is, as a client watching it sees it
// (httpapi.Client.WatchTrigger): its status, and what the desk's status
// says of it.
type TriggerProgress struct {
	Trigger TriggerStatus
	// Depth is the desk's queue depth while the trigger is queued.
	Depth int
	// Phase is the turn's phase while the trigger runs.
	Phase Phase
	// Paused is the desk's pause while the trigger waits in its queue;
	// PausedTriggers what the paused desk does with triggers.
	Paused         *Pause
	PausedTriggers triggers.PausedTriggers
}

// ProgressOf is what trigger s of desk status st says: the trigger's
// queue and pause while it is queued, its phase while it runs (none when
// st does not show it running: a status not read, or of the instant
// before its turn began).
func ProgressOf(s TriggerStatus, st Status) TriggerProgress {
	p := TriggerProgress{Trigger: s}
	switch s.State {
	case triggers.StateQueued:
		// The two are read one after the other: the queue may have moved
		// in between, but the trigger is in it.
		p.Depth, p.Paused, p.PausedTriggers = max(st.QueueDepth, s.Position), st.Paused, st.PausedTriggers
	case triggers.StateRunning:
		if st.Running != nil && st.Running.Trigger == s.ID {
			p.Phase = st.Running.Phase
		}
	}
	return p
}

// Same reports whether q, read after p, shows the same progress: a
// watcher reports only changes. A queued trigger without a position has
// just been taken from the queue (its ledger says running a moment
// later): no news. Nor is a running trigger whose phase the desk's status
// no longer shows after one that had a phase (the status was read just
// after its turn ended, before its ledger says answered).
func (p TriggerProgress) Same(q TriggerProgress) bool {
	if p.Trigger.State == triggers.StateRunning && q.Trigger.State == triggers.StateRunning && q.Phase == "" {
		return true
	}
	if p.Trigger.State == triggers.StateQueued && q.Trigger.State == triggers.StateQueued &&
		(p.Trigger.Position == 0 || q.Trigger.Position == 0) {
		return (p.Paused == nil) == (q.Paused == nil)
	}
	return p.Trigger.State == q.Trigger.State && p.Trigger.Position == q.Trigger.Position && p.Depth == q.Depth &&
		p.Phase == q.Phase && (p.Paused == nil) == (q.Paused == nil)
}
