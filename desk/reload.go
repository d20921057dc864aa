package desk

// Live reload of the running daemon's config.
//
// A reload loads and validates the whole config (config.LoadKeeping, and
// every desk's model route built) before anything changes. A problem in a
// desk file refuses that file alone: its desk keeps its last good config
// (a desk whose first file is bad is not started), and the other files
// are applied. Any other problem (the main file, a calendar, a misnamed
// file in the desks folder, a route) refuses the whole reload, since the
// main file governs every desk, and the last good config keeps running.
// Each problem is announced (config.rejected, with its desk), logged at
// error level, and shown (Status.ConfigRejected, Set.ConfigRejections)
// until a good version of the file is loaded or the file is removed
// (config.reloaded's cleared). What validates is applied as config.Plan
// says, desk by desk: a removed desk
// stops after its running turn (its files stay); a new desk starts; a
// changed desk takes its new settings between turns (schedules, queue,
// model route, instructions, tools, budgets); a change a running desk
// cannot take (rollover, curator on or off, the memory guard, the calendar
// of a trading_day rollover) restarts that desk alone, after its running
// turn. The log level changes at once. Daemon-wide settings that need a
// restart (state_dir, listen, timezone, ...) are reported and keep their
// running values. config.reloaded lists the changes.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/event"
)

// load loads the config at cur's path for a reload or a check, desk file
// by desk file (config.LoadKeeping: a refused desk file keeps its desk on
// its config in cur), every desk's model route built, and planned against
// cur. It returns the plan and the desk files refused, or the problems
// that refuse the whole reload.
func (d *Daemon) load(cur *config.Config) (config.Reload, []config.Rejected, config.Problems) {
	loaded, err := config.LoadKeeping(cur.Path, cur)
	if err == nil {
		logConfigRead(d.o.Log, loaded.Config)
		if cur.StateDirOverridden { // deskd run --state-dir outlives the file
			loaded.Config.StateDir, loaded.Config.StateDirOverridden = cur.StateDir, true
		}
	}
	if err != nil {
		var problems config.Problems
		if !errors.As(err, &problems) {
			problems = config.Problems{{File: cur.Path, Reason: err.Error()}}
		}
		return config.Reload{}, nil, problems
	}
	if problems := checkRoutes(loaded.Config); len(problems) > 0 {
		return config.Reload{}, nil, problems
	}
	return config.Plan(cur, loaded.Config), loaded.Rejected, nil
}

// reload loads the config again and applies it: every good desk file, with
// each refused desk file's desk kept on its last good config (or not
// started, when it has none); or it refuses the whole reload, when a
// problem is not any one desk file's. It runs in the main loop, so
// reloads never overlap; it never waits for a turn.
func (d *Daemon) reload(ctx, deskCtx context.Context, why string) {
	_ = d.o.Notify.Reloading("reloading the config: " + why)
	cur := d.cur.Load()
	plan, rejected, problems := d.load(cur)
	if len(problems) > 0 {
		// The desk files were not all examined again: each desk's
		// rejection stands (its since too) until a reload looks at its
		// file, beside the problems that refused the whole reload.
		seen := map[string]bool{}
		for _, p := range problems {
			seen[p.File] = true
		}
		for _, r := range d.fleet.set.ConfigRejections() {
			if r.Desk != "" && !seen[r.File] {
				problems = append(problems, config.Problem{File: r.File, Field: r.Field, Reason: r.Reason})
			}
		}
		d.noteRejected(cur, problems)
		d.o.Log.Error().Str("config", cur.Path).Str("why", why).Int("problems", len(problems)).Str("first", problems[0].String()).
			Msg("config rejected whole: a problem that is not one desk file's alone (the main file, a calendar, a misnamed file, a model route) " +
				"governs every desk, so nothing was applied; the last good config keeps running")
		_ = d.o.Notify.Ready(fmt.Sprintf("config rejected (%s); %s on the last good config", problems[0], d.statusLine("running")))
		return
	}
	d.apply(ctx, deskCtx, plan)
	cleared := d.noteRejected(plan.Next, rejectedProblems(rejected))
	d.logRejected(rejected)
	d.snapshotConfig(d.cur.Load(), "reload")
	whats := make([]string, 0, len(plan.Changes))
	for _, c := range plan.Changes {
		whats = append(whats, c.String())
	}
	event.Publish(d.o.Bus, event.ConfigReloaded{Header: event.Header{At: d.o.Clock.Now()}, Changes: whats, Cleared: cleared})
	_ = d.o.Notify.Ready(d.statusLine("running") + refusedLine(rejected))
}

// refusedLine tells the service manager which desk files were refused:
// "; desk files refused: fx (on its last good config), eq (not started)".
func refusedLine(rs []config.Rejected) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		what := " (not started)"
		if r.Kept {
			what = " (on its last good config)"
		}
		parts = append(parts, r.Desk+what)
	}
	return "; desk files refused: " + strings.Join(parts, ", ")
}

// rejectedProblems is every problem of the refused desk files.
func rejectedProblems(rs []config.Rejected) config.Problems {
	return config.Loaded{Rejected: rs}.Problems()
}

// noteRejected announces each problem (config.rejected, with its desk)
// and makes them the current rejections, which the status, the API and
// the metrics show; cfg names the desk of each file. It returns the desks
// whose rejection cleared ("" for the main file), and logs each.
func (d *Daemon) noteRejected(cfg *config.Config, problems config.Problems) (cleared []string) {
	now := d.o.Clock.Now()
	deskOf := func(file string) string { name, _ := cfg.DeskOf(file); return name }
	cur, cleared := rejections(d.fleet.set.ConfigRejections(), problems, deskOf, now)
	for _, r := range cur {
		event.Publish(d.o.Bus, event.ConfigRejected{Header: event.Header{At: now, Desk: r.Desk}, Path: r.File, Field: r.Field, Reason: r.Reason})
	}
	d.fleet.set.setRejections(cur)
	for _, name := range cleared {
		what := "desk " + name + ": its file"
		if name == "" {
			what = "the main config"
		}
		d.o.Log.Info().Str("desk", name).Msg(what + " is no longer refused: its rejection is cleared")
	}
	return cleared
}

// logRejected logs each refused desk file and what became of its desk.
func (d *Daemon) logRejected(rs []config.Rejected) {
	for _, r := range rs {
		l := d.o.Log.Error().Str("desk", r.Desk).Str("file", r.File).Str("first", r.Problems[0].String())
		if r.Kept {
			l.Msg("desk file refused: the desk runs on its last good config; the other desks' edits were applied")
		} else {
			l.Msg("desk file refused: the desk has no good config yet, so it is not started; the other desks' edits were applied")
		}
	}
}

// snapshotConfig keeps the effective config cfg, which has just come into
// force, under the state folder (config.WriteSnapshot), for the audit of
// the days it is in force. A failure is logged: it never stops the daemon
// or refuses a reload.
func (d *Daemon) snapshotConfig(cfg *config.Config, reason string) {
	path, err := config.WriteSnapshot(cfg, d.o.Clock.Now(), reason)
	if err != nil {
		d.o.Log.Error().Err(err).Str("config", cfg.Path).Str("reason", reason).
			Msg("the config in force could not be kept for audits; the audit of today will not hold it")
		return
	}
	if path != "" {
		d.o.Log.Info().Str("snapshot", path).Str("reason", reason).Msg("config in force kept for audits")
	}
}

// deskAction is what a plan does to one running desk.
type deskAction int

const (
	keepDesk deskAction = iota
	stopDesk
	restartDesk
	reconfigureDesk
)

// apply puts plan.Next in force, desk by desk.
func (d *Daemon) apply(ctx, deskCtx context.Context, plan config.Reload) {
	f, next := d.fleet, plan.Next
	if plan.LogLevel != "" && d.o.Level != nil {
		if l, err := zerolog.ParseLevel(plan.LogLevel); err == nil {
			d.o.Level.Set(l)
		}
	}
	actions := map[string]deskAction{}
	for _, list := range []struct {
		names []string
		do    deskAction
	}{{plan.Stop, stopDesk}, {plan.Restart, restartDesk}, {plan.Reconfigure, reconfigureDesk}} {
		for _, name := range list.names {
			actions[name] = list.do
		}
	}
	// The new config is in force from here: a desk that stops below starts
	// again on it (exited).
	d.cur.Store(next)
	f.acting.host.Configure(next.MCPServers) // a changed server restarts

	if d.cl != nil {
		for _, name := range plan.Stop {
			d.cl.forget(name) // a desk stood by for is forgotten; one running here releases its lease once stopped
		}
	}
	for _, name := range sortedNames(f.runs) {
		run := f.runs[name]
		if run.stopping {
			continue // it starts again on next when it has stopped, if next has it
		}
		switch actions[name] {
		case stopDesk:
			f.set.Remove(name)
			f.stop(run, errors.New("its desk file was removed (its files stay)"))
			d.o.Log.Info().Str("desk", name).Msg("desk file removed: the desk stops after its running turn")
		case restartDesk:
			f.stop(run, errors.New("restarting to apply a config change"))
			d.o.Log.Info().Str("desk", name).Msg("config change needs a restart of the desk: it restarts after its running turn")
		case reconfigureDesk:
			if err := d.configure(next, run, next.Desks[name]); err != nil {
				d.o.Log.Error().Err(err).Str("desk", name).Msg("desk keeps its old settings")
			}
		}
	}
	var added []*deskRun
	for _, name := range plan.Start {
		if _, running := f.runs[name]; running {
			continue // stopping: its exit starts it again on next
		}
		if d.cl != nil { // in a cluster, it starts once its lease is won
			f.set.Standby(name, nil)
			d.cl.contend(name)
			continue
		}
		run, err := f.start(deskCtx, next, next.Desks[name], nil)
		if err != nil {
			d.o.Log.Error().Err(err).Str("desk", name).Msg("desk failed to start; the next reload tries again")
			d.dropDesk(name)
			continue
		}
		added = append(added, run)
	}
	for _, run := range added {
		if err := f.awaitStarted(ctx, run); err != nil {
			f.stop(run, errors.New("it failed to start"))
			d.dropDesk(run.name) // its exit closes its files
		}
	}
	if plan.Rewatch || d.watch.w == nil {
		d.stopWatch()
		d.startWatch(ctx, next)
	}
	if d.spool.running() {
		if err := d.spool.start(ctx); err != nil {
			d.o.Log.Error().Err(err).Msg("inbox folders of the new desks")
		}
	}
}

// configure hands a running desk its new settings; the desk applies them
// between turns.
func (d *Daemon) configure(cfg *config.Config, run *deskRun, dc *config.Desk) error {
	s, err := settingsOf(cfg, dc, run.folder, d.o.Clock, d.fleet.pool, d.fleet.acting, func() bool { return run.desk.Paused() != nil })
	if err != nil {
		return err
	}
	if err := run.desk.Configure(s); err != nil {
		return err
	}
	if run.cur != nil {
		run.cur.set(dc)
	}
	return nil
}

// Config returns the config in force: the one the daemon started on, or
// the last a reload applied. It may be called from any goroutine; the
// config returned must not be changed.
func (d *Daemon) Config() *config.Config { return d.cur.Load() }

// Check loads the config files as a reload would, and compares them with
// the config in force (GET /v1/config/diff). It changes nothing, and may
// be called from any goroutine.
func (d *Daemon) Check() ConfigCheck {
	cur := d.cur.Load()
	out := ConfigCheck{Config: cur.Path, Changes: []ConfigChange{}, Problems: []string{}}
	plan, rejected, problems := d.load(cur)
	for _, p := range append(problems, rejectedProblems(rejected)...) {
		out.Problems = append(out.Problems, p.String())
	}
	if len(problems) > 0 {
		return out // the whole reload would be refused: nothing changes
	}
	// A refused desk file alone refuses only its desk: the other changes
	// would apply.
	for _, c := range plan.Changes {
		out.Changes = append(out.Changes, ConfigChange{Desk: c.Desk, Field: c.Field, What: c.String(), Restart: c.Restart})
	}
	return out
}
