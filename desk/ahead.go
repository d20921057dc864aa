package desk

import (
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/triggers"
)

// SchedulesAhead returns the desk's schedules whose latest claimed slot,
// by its ledger, is later than now: they fire nothing until their next
// slot after it (triggers.Scheduler.AheadOf).
func (d *Desk) SchedulesAhead(now time.Time) []triggers.Claimed {
	d.mu.Lock()
	sched := d.sched
	d.mu.Unlock()
	return sched.AheadOf(now)
}

// AheadNames returns "desk/schedule" of every schedule of the desks of set
// that fires nothing until after a slot already claimed (SchedulesAhead).
func AheadNames(set *Set, now time.Time) []string {
	var out []string
	for _, d := range set.List() {
		for _, c := range d.SchedulesAhead(now) {
			out = append(out, d.Name()+"/"+c.Schedule)
		}
	}
	return out
}

// warnAhead logs, at warn, each schedule of the running desks that fires
// nothing until after a slot already claimed, because deskd's clock
// starts before it.
func (d *Daemon) warnAhead(cfg *config.Config) {
	now := d.o.Clock.Now()
	if cfg.Location != nil {
		now = now.In(cfg.Location) // as the operator wrote --clock-start
	}
	for _, dk := range d.fleet.set.List() {
		for _, c := range dk.SchedulesAhead(now) {
			d.o.Log.Warn().Str("desk", dk.Name()).Str("schedule", c.Schedule).Time("last_slot", c.Last).
				Msgf("desk %s: schedule %s has already fired every slot up to %s (state in %s); with deskd's clock at %s (--clock-start) it fires nothing until then",
					dk.Name(), c.Schedule, c.Last.In(now.Location()).Format(time.RFC3339), folderOf(cfg, dk.Name()), now.Format(time.RFC3339))
		}
	}
}
