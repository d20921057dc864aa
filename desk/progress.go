package desk

import (
	"context"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
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
