package main

// The running daemon: its desks (started, stopped and restarted one by one
// while the others run), its main loop, and live reload of the config.
//
// A reload loads and validates the whole config (config.Load, and every
// desk's model route built) before anything changes. Any problem refuses
// the whole reload: each problem is announced (config.rejected) and logged
// at error level, and the last good config keeps running. A config that
// validates is applied desk by desk: a removed desk stops after its running
// turn (its files stay); a new desk starts; a changed desk takes its new
// settings between turns (schedules, queue, model route, instructions,
// tools, budgets); a change a running desk cannot take (rollover, curator
// on or off, the memory guard) restarts that desk alone, after its running
// turn. The log level changes at once. Daemon-wide settings that need a
// restart (state_dir, listen, timezone, ...) are reported and keep their
// running values. config.reloaded lists the changes.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// deskRun is one desk of the running daemon: its folder and ledger, which
// outlive a restart of the desk, and the loop now running on them.
type deskRun struct {
	name   string
	folder *memory.Folder
	ledger *triggers.Ledger
	cfg    *config.Desk

	desk   *desk.Desk
	router *router.Router
	cur    *liveCurator // nil when the curator is off
	cancel context.CancelCauseFunc
	exited chan struct{} // closed once Run has returned; err is set then
	err    error
	// stopping is set when the daemon stopped the desk (removed, restarting
	// or shutting down); an exit without it is a failure.
	stopping bool
}

// fleet is the daemon's desks. Only the main loop's goroutine uses it,
// but for set, which the API reads.
type fleet struct {
	clk clock.Clock
	bus *event.Bus
	log zerolog.Logger

	set   *desk.Set
	runs  map[string]*deskRun
	exits chan *deskRun // each desk's goroutine sends its run when Run returns
	wg    sync.WaitGroup
}

func newFleet(clk clock.Clock, bus *event.Bus, log zerolog.Logger) *fleet {
	return &fleet{clk: clk, bus: bus, log: log, set: desk.NewSet(), runs: map[string]*deskRun{}, exits: make(chan *deskRun)}
}

// start starts desk dc under ctx: on its folder and ledger, which it opens
// unless a stopped run of the desk left them open (reuse). Wait for it with
// awaitStarted.
func (f *fleet) start(ctx context.Context, cfg *config.Config, dc *config.Desk, reuse *deskRun) (*deskRun, error) {
	run := reuse
	if run == nil {
		folder, err := memory.OpenFolder(folderOf(cfg, dc.Name), dc.Name, f.clk.Now)
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		// Under the state-dir lock and before the desk runs, nothing else
		// writes here: temp files are what a crash left mid-write.
		stale, err := folder.RemoveStaleTemps()
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		if len(stale) > 0 {
			f.log.Warn().Str("desk", dc.Name).Strs("removed", stale).Msg("removed temp files a crash left mid-write")
		}
		ledger, err := triggers.OpenLedger(folder.Path(triggers.LedgerFile))
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		run = &deskRun{name: dc.Name, folder: folder, ledger: ledger}
	}
	d, r, cur, err := buildDesk(cfg, dc, run.folder, run.ledger, f.clk, f.bus)
	if err != nil {
		if reuse == nil {
			_ = run.ledger.Close()
		}
		return nil, err
	}
	dctx, cancel := context.WithCancelCause(ctx)
	run.cfg, run.desk, run.router, run.cur, run.cancel = dc, d, r, cur, cancel
	run.exited, run.err, run.stopping = make(chan struct{}), nil, false
	f.runs[dc.Name] = run
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		run.err = d.Run(dctx)
		close(run.exited)
		f.exits <- run
	}()
	return run, nil
}

// folderOf returns a desk's folder in the state folder.
func folderOf(cfg *config.Config, name string) string {
	return filepath.Join(cfg.StateDir, "desks", name)
}

// awaitStarted waits until run's desk takes triggers, and puts it in the
// set. A desk whose Run ended first failed to start: its error is logged
// at once and returned. When ctx ends first, awaitStarted returns nil.
func (f *fleet) awaitStarted(ctx context.Context, run *deskRun) error {
	select {
	case <-run.desk.Started():
		f.set.Put(run.desk)
		if p := run.desk.Paused(); p != nil {
			f.log.Warn().Str("desk", run.name).Str("by", p.By).Time("paused_at", p.At).Str("reason", p.Reason).
				Msg("desk is paused: it runs no turn until deskd resume")
		}
		return nil
	case <-run.exited:
		err := run.err
		if err == nil {
			err = fmt.Errorf("desk %s stopped as it started", run.name)
		}
		f.log.Error().Err(err).Str("desk", run.name).Msg("desk failed to start")
		return err
	case <-ctx.Done():
		return nil
	}
}

// stop tells run's desk to stop after its running turn; cause is the
// reason desk.stopped gives.
func (f *fleet) stop(run *deskRun, cause error) {
	run.stopping = true
	run.cancel(cause)
}

// stopAll stops every desk. They stay in the set, so that the API can
// still tell their status and their triggers' while they stop.
func (f *fleet) stopAll(cause error) {
	for _, run := range f.runs {
		f.stop(run, cause)
	}
}

// ended closes what the stopped loop of run held (its session file); the
// folder and the ledger stay open for a restart, see close.
func (f *fleet) ended(run *deskRun) {
	if err := run.router.Close(); err != nil {
		f.log.Error().Err(err).Str("desk", run.name).Msg("close session")
	}
}

// close closes run's ledger and forgets it.
func (f *fleet) close(run *deskRun) {
	if err := run.ledger.Close(); err != nil {
		f.log.Error().Err(err).Str("desk", run.name).Msg("close the trigger ledger")
	}
	if f.runs[run.name] == run {
		delete(f.runs, run.name)
	}
}

// supervisor is the running daemon, held by runDaemon for its life: the config
// in force, the desks, the services, and what talks to systemd.
type supervisor struct {
	clk    clock.Clock
	bus    *event.Bus
	log    zerolog.Logger
	level  *levelFilter
	notify *notifier
	hb     *heartbeat

	// cur is the config in force. The API reads it (GET /v1/config/diff);
	// only the main loop stores it.
	cur   atomic.Pointer[config.Config]
	fleet *fleet
	svc   *services

	watcher     *config.Watcher
	watchStop   context.CancelFunc
	watchDone   chan struct{}
	watchdogEnd context.CancelFunc
	watchdog    sync.WaitGroup

	// terms counts SIGTERM and SIGINT: the first stops deskd, the second
	// cuts running turns short.
	terms int
}

// startDesks starts the desks named, in order, and waits for each to take
// triggers. The first that fails ends it with its error.
func (dm *supervisor) startDesks(ctx, deskCtx context.Context, cfg *config.Config, names []string) error {
	var runs []*deskRun
	for _, name := range names {
		run, err := dm.fleet.start(deskCtx, cfg, cfg.Desks[name], nil)
		if err != nil {
			dm.log.Error().Err(err).Str("desk", name).Msg("desk failed to start")
			return err
		}
		runs = append(runs, run)
	}
	for _, run := range runs {
		if err := dm.fleet.awaitStarted(ctx, run); err != nil {
			return err
		}
	}
	return nil
}

// serve tells systemd deskd is ready, then runs the main loop until ctx is
// done, the first SIGTERM or SIGINT, or a failure (the API stops serving,
// a desk stops on its own). It reloads on SIGHUP and on changes of the
// config files. When WatchdogSec is set, the loop's heartbeat keeps the
// watchdog pings going; a stuck loop stops them.
func (dm *supervisor) serve(ctx, deskCtx context.Context, sigs <-chan os.Signal) error {
	iv, err := watchdogInterval()
	if err != nil {
		dm.log.Warn().Err(err).Msg("systemd watchdog: WATCHDOG_USEC is not usable; no watchdog pings")
	}
	if iv > 0 {
		wctx, end := context.WithCancel(ctx)
		dm.watchdogEnd = end
		dm.watchdog.Add(1)
		go func() {
			defer dm.watchdog.Done()
			_ = dm.notify.Watchdog(wctx, func() bool { return dm.hb.Fresh(iv / 2) })
		}()
		dm.log.Info().Dur("watchdog", iv).Msg("systemd watchdog on: pinging while the main loop is alive")
	}
	_ = dm.notify.Ready(dm.statusLine("running"))
	for {
		dm.hb.Beat()
		if stop, err := dm.step(ctx, deskCtx, sigs, iv); stop {
			return err
		}
	}
}

// step is one round of the main loop: it waits for one thing to do (or
// for the heartbeat's next beat) and does it. stop is true when deskd
// must stop.
func (dm *supervisor) step(ctx, deskCtx context.Context, sigs <-chan os.Signal, watchdog time.Duration) (stop bool, err error) {
	var beat <-chan time.Time
	if watchdog > 0 {
		t := dm.clk.NewTimer(watchdog / 4)
		defer t.Stop()
		beat = t.C()
	}
	var changes <-chan struct{}
	if dm.watcher != nil {
		changes = dm.watcher.Changes()
	}
	select {
	case <-ctx.Done():
		return true, nil
	case sig := <-sigs:
		if sig == syscall.SIGHUP {
			dm.reload(ctx, deskCtx, "SIGHUP")
			return false, nil
		}
		dm.terms++
		dm.log.Info().Str("signal", sig.String()).Msg("signal received")
		return true, nil
	case <-changes:
		dm.reload(ctx, deskCtx, "the config files changed")
	case err := <-dm.svc.Errs():
		return true, err
	case run := <-dm.fleet.exits:
		if err := dm.exited(ctx, deskCtx, run); err != nil {
			return true, err
		}
	case <-beat:
	}
	return false, nil
}

// exited handles the end of a desk's loop while deskd runs: a desk the
// daemon stopped starts again if the config still has it (a restart, or a
// desk removed and added again meanwhile); a desk that stopped on its own
// is a failure, which stops deskd.
func (dm *supervisor) exited(ctx, deskCtx context.Context, run *deskRun) error {
	f := dm.fleet
	f.ended(run)
	if !run.stopping {
		f.set.Remove(run.name)
		f.close(run)
		err := run.err
		if err == nil {
			err = fmt.Errorf("desk %s stopped on its own", run.name)
		}
		dm.log.Error().Err(err).Str("desk", run.name).Msg("desk stopped unexpectedly; deskd stops")
		return err
	}
	cfg := dm.cur.Load()
	dc, ok := cfg.Desks[run.name]
	if !ok {
		f.set.Remove(run.name)
		f.close(run)
		dm.log.Info().Str("desk", run.name).Str("folder", run.folder.Dir()).Msg("desk stopped; its files stay")
		return nil
	}
	if _, err := f.start(deskCtx, cfg, dc, run); err != nil {
		f.set.Remove(run.name)
		f.close(run)
		dm.dropDesk(run.name)
		dm.log.Error().Err(err).Str("desk", run.name).Msg("desk failed to restart; the next reload tries again")
		return nil
	}
	if err := f.awaitStarted(ctx, run); err != nil {
		// Its loop has ended; its exit, which comes next, closes its files.
		f.set.Remove(run.name)
		f.stop(run, errors.New("it failed to start"))
		dm.dropDesk(run.name)
		return nil
	}
	dm.log.Info().Str("desk", run.name).Msg("desk restarted on its new config")
	_ = dm.notify.Status(dm.statusLine("running"))
	return nil
}

// dropDesk takes a desk that failed to start out of the config in force,
// so that the next reload sees it as new and tries again.
func (dm *supervisor) dropDesk(name string) {
	cfg := *dm.cur.Load()
	cfg.Desks = maps.Clone(cfg.Desks)
	delete(cfg.Desks, name)
	dm.cur.Store(&cfg)
}

// drain waits for every desk's loop to end after stopAll, closing each
// desk's files. A SIGTERM or SIGINT meanwhile (the second in all) cuts
// running turns short; after it, a third ends the process at once.
func (dm *supervisor) drain(sigs chan os.Signal) {
	f := dm.fleet
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	for {
		select {
		case run := <-f.exits:
			f.ended(run)
			f.close(run)
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				dm.log.Info().Msg("SIGHUP during shutdown: not reloading")
				continue
			}
			dm.terms++
			if dm.terms < 2 {
				continue // the signal that began the shutdown, counted late
			}
			dm.log.Warn().Str("signal", sig.String()).Msg("second signal: running turns are cancelled now and recorded interrupted")
			_ = dm.notify.Status("stopping: running turns cancelled by a second signal")
			for _, run := range f.runs {
				run.desk.CutShort()
			}
			signal.Stop(sigs)
		case <-done: // every exit was received before
			return
		}
	}
}

// startWatch watches the config files and feeds the main loop.
func (dm *supervisor) startWatch(ctx context.Context, cfg *config.Config) {
	w, err := config.NewWatcher(cfg.Path, cfg.DesksDir, dm.clk, config.DefaultDebounce, cfg.CalendarsDir)
	if err != nil {
		dm.log.Warn().Err(err).Msg("the config files are not watched: reload with SIGHUP (systemctl reload deskd)")
		return
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	dm.watcher, dm.watchStop, dm.watchDone = w, stop, done
	go func() { defer close(done); _ = w.Run(wctx) }()
	dm.log.Info().Strs("watching", w.Watching()).Msg("watching the config files: edits are reloaded")
}

// stopWatch stops watching the config files.
func (dm *supervisor) stopWatch() {
	if dm.watcher == nil {
		return
	}
	dm.watchStop()
	<-dm.watchDone
	dm.watcher = nil
}

// stopWatchdog stops the watchdog pings.
func (dm *supervisor) stopWatchdog() {
	if dm.watchdogEnd != nil {
		dm.watchdogEnd()
	}
	dm.watchdog.Wait()
}

// statusLine is deskd's STATUS= line: what it is doing, its desks, the
// paused ones.
func (dm *supervisor) statusLine(doing string) string {
	desks := dm.fleet.set.List()
	var names, paused []string
	for _, d := range desks {
		names = append(names, d.Name())
		if d.Paused() != nil {
			paused = append(paused, d.Name())
		}
	}
	s := fmt.Sprintf("%s %s", doing, plural(len(desks), "desk"))
	if len(names) > 0 {
		s += ": " + strings.Join(names, ", ")
	}
	if len(paused) > 0 {
		s += "; paused: " + strings.Join(paused, ", ")
	}
	return s
}

// load loads the config at cur's path for a reload or a check: validated
// whole, every desk's model route checked (router.CheckSpec: no key read,
// no client built), and the settings a running deskd cannot change pinned
// to cur's. It returns the config as loaded (for the diff) and as it
// would run, or the problems.
func (dm *supervisor) load(cur *config.Config) (loaded, next *config.Config, problems config.Problems) {
	c, err := config.Load(cur.Path)
	if err != nil {
		if !errors.As(err, &problems) {
			problems = config.Problems{{File: cur.Path, Reason: err.Error()}}
		}
		return nil, nil, problems
	}
	for _, name := range sortedNames(c.Desks) {
		dc := c.Desks[name]
		for i, m := range append([]string{dc.Model}, dc.Fallbacks...) {
			if err := router.CheckSpec(c.Models[m].Spec()); err != nil {
				field := "model"
				if i > 0 {
					field = fmt.Sprintf("fallbacks[%d]", i-1)
				}
				problems = append(problems, config.Problem{File: dc.Path, Field: field, Reason: err.Error()})
			}
		}
	}
	if len(problems) > 0 {
		return nil, nil, problems
	}
	pinned := *c
	pinned.StateDir, pinned.Listen, pinned.Listens, pinned.AuthTokenFile = cur.StateDir, cur.Listen, cur.Listens, cur.AuthTokenFile
	pinned.FeedTokenFile, pinned.MetricsTokenFile = cur.FeedTokenFile, cur.MetricsTokenFile
	pinned.Timezone, pinned.Location, pinned.RolloverAt, pinned.Day = cur.Timezone, cur.Location, cur.RolloverAt, cur.Day
	pinned.Log.Format, pinned.ShutdownTimeout = cur.Log.Format, cur.ShutdownTimeout
	return c, &pinned, nil
}

// reload loads the config again and applies it, or refuses it whole. It
// runs in the main loop, so reloads never overlap; it never waits for a
// turn.
func (dm *supervisor) reload(ctx, deskCtx context.Context, why string) {
	_ = dm.notify.Reloading("reloading the config: " + why)
	cur := dm.cur.Load()
	loaded, next, problems := dm.load(cur)
	if len(problems) > 0 {
		now := dm.clk.Now()
		for _, p := range problems {
			event.Publish(dm.bus, event.ConfigRejected{Header: event.Header{At: now}, Path: p.File, Field: p.Field, Reason: p.Reason})
		}
		dm.log.Error().Str("config", cur.Path).Str("why", why).Int("problems", len(problems)).Str("first", problems[0].String()).
			Msg("config rejected: the last good config keeps running")
		_ = dm.notify.Ready(fmt.Sprintf("config rejected (%s); %s on the last good config", problems[0], dm.statusLine("running")))
		return
	}
	changes := config.Diff(cur, loaded)
	dm.apply(ctx, deskCtx, cur, next, changes)
	dm.snapshotConfig(dm.cur.Load(), "reload")
	whats := make([]string, 0, len(changes))
	for _, c := range changes {
		whats = append(whats, c.String())
	}
	event.Publish(dm.bus, event.ConfigReloaded{Header: event.Header{At: dm.clk.Now()}, Changes: whats})
	_ = dm.notify.Ready(dm.statusLine("running"))
}

// snapshotConfig keeps the effective config cfg, which has just come into
// force, under the state folder (see writeConfigSnapshot), for the audit
// of the days it is in force. A failure is logged: it never stops deskd
// or refuses a reload.
func (dm *supervisor) snapshotConfig(cfg *config.Config, reason string) {
	path, err := writeConfigSnapshot(cfg, dm.clk.Now(), reason)
	if err != nil {
		dm.log.Error().Err(err).Str("config", cfg.Path).Str("reason", reason).
			Msg("the config in force could not be kept for audits; the audit of today will not hold it")
		return
	}
	if path != "" {
		dm.log.Info().Str("snapshot", path).Str("reason", reason).Msg("config in force kept for audits")
	}
}

// apply puts next in force, desk by desk.
func (dm *supervisor) apply(ctx, deskCtx context.Context, cur, next *config.Config, changes []config.Change) {
	f := dm.fleet
	if cur.Log.Level != next.Log.Level {
		if l, err := zerolog.ParseLevel(next.Log.Level); err == nil {
			dm.level.Set(l)
		}
	}
	byDesk := map[string][]config.Change{}
	var daemonFields []string
	for _, c := range changes {
		if c.Desk != "" {
			byDesk[c.Desk] = append(byDesk[c.Desk], c)
		} else {
			daemonFields = append(daemonFields, c.Field)
		}
	}
	// The new config is in force from here: a desk that stops below starts
	// again on it (exited).
	dm.cur.Store(next)

	var added []*deskRun
	for _, name := range sortedNames(f.runs) {
		run := f.runs[name]
		if run.stopping {
			continue // it starts again on next when it has stopped, if next has it
		}
		dc, ok := next.Desks[name]
		switch {
		case !ok:
			f.set.Remove(name)
			f.stop(run, errors.New("its desk file was removed (its files stay)"))
			dm.log.Info().Str("desk", name).Msg("desk file removed: the desk stops after its running turn")
		case needsRestart(run.cfg, dc, daemonFields):
			f.stop(run, errors.New("restarting to apply a config change"))
			dm.log.Info().Str("desk", name).Msg("config change needs a restart of the desk: it restarts after its running turn")
		case len(byDesk[name]) > 0 || touches(run.cfg, dc, daemonFields):
			if err := dm.configure(next, run, dc); err != nil {
				dm.log.Error().Err(err).Str("desk", name).Msg("desk keeps its old settings")
			}
		}
	}
	for _, name := range sortedNames(next.Desks) {
		if _, running := f.runs[name]; running {
			continue
		}
		run, err := f.start(deskCtx, next, next.Desks[name], nil)
		if err != nil {
			dm.log.Error().Err(err).Str("desk", name).Msg("desk failed to start; the next reload tries again")
			dm.dropDesk(name)
			continue
		}
		added = append(added, run)
	}
	for _, run := range added {
		if err := f.awaitStarted(ctx, run); err != nil {
			f.stop(run, errors.New("it failed to start"))
			dm.dropDesk(run.name) // its exit closes its files
		}
	}
	if next.DesksDir != cur.DesksDir || next.CalendarsDir != cur.CalendarsDir || dm.watcher == nil {
		dm.stopWatch()
		dm.startWatch(ctx, next)
	}
	if dm.svc != nil {
		if err := dm.svc.SetDesks(ctx); err != nil {
			dm.log.Error().Err(err).Msg("inbox folders of the new desks")
		}
	}
}

// configure hands a running desk its new settings; the desk applies them
// between turns.
func (dm *supervisor) configure(cfg *config.Config, run *deskRun, dc *config.Desk) error {
	rs, err := routerSettings(cfg, dc, run.folder, dm.clk)
	if err != nil {
		return err
	}
	err = run.desk.Configure(desk.Settings{
		Schedules: cfg.Entries(dc), QueueLimit: dc.QueueLimit, Coalesce: dc.Coalesce.ByKey(),
		Calendar: cfg.CalendarOf(dc.Calendar), Router: &rs, RefusePaused: dc.PausedTriggers.Refuse(),
	})
	if err != nil {
		return err
	}
	if run.cur != nil {
		run.cur.set(dc)
	}
	run.cfg = dc
	return nil
}

// needsRestart reports whether a running desk must restart to take dc:
// the keeper's settings (rollover, curator on or off, the memory guard)
// are fixed for the life of the desk's loop.
func needsRestart(old, dc *config.Desk, daemonFields []string) bool {
	if old.Rollover != dc.Rollover || old.Curator.Enabled != dc.Curator.Enabled || old.Memory != dc.Memory {
		return true
	}
	if dc.Rollover == keeper.RolloverTradingDay {
		return !strings.EqualFold(old.Calendar, dc.Calendar) || slices.ContainsFunc(daemonFields, func(f string) bool {
			return strings.EqualFold(f, "calendars."+dc.Calendar)
		})
	}
	return false
}

// touches reports whether a daemon-wide change concerns a desk that did
// not change itself: a model of its route, or a calendar.
func touches(old, dc *config.Desk, daemonFields []string) bool {
	route := append(append([]string{old.Model, dc.Model}, old.Fallbacks...), dc.Fallbacks...)
	for _, f := range daemonFields {
		if name, ok := strings.CutPrefix(f, "models."); ok && slices.Contains(route, name) {
			return true
		}
		if strings.HasPrefix(f, "calendars.") {
			return true
		}
	}
	return false
}

// check loads the config files as a reload would, and compares them with
// the config in force. It changes nothing.
func (dm *supervisor) check() desk.ConfigCheck {
	cur := dm.cur.Load()
	out := desk.ConfigCheck{Config: cur.Path, Changes: []desk.ConfigChange{}, Problems: []string{}}
	loaded, _, problems := dm.load(cur)
	for _, p := range problems {
		out.Problems = append(out.Problems, p.String())
	}
	if loaded == nil {
		return out
	}
	for _, c := range config.Diff(cur, loaded) {
		out.Changes = append(out.Changes, desk.ConfigChange{Desk: c.Desk, Field: c.Field, What: c.String(), Restart: c.Restart})
	}
	return out
}

// plural reads "1 desk", "2 desks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
