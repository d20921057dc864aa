package desk

// The running daemon: its desks (started, stopped and restarted one by one
// while the others run), its main loop, its ordered shutdown. Live reload
// is in reload.go.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
)

// Notifier tells the service manager (systemd's sd_notify) what the
// daemon is doing. Its errors are ignored: a daemon not run by systemd
// has nobody to tell.
type Notifier interface {
	// Ready says the daemon serves (at the start, and after each reload).
	Ready(status string) error
	// Reloading says a reload has begun; Ready follows it.
	Reloading(status string) error
	// Stopping says the shutdown has begun.
	Stopping(status string) error
	// Status says what the daemon is doing.
	Status(status string) error
	// Watchdog pings the service manager's watchdog for as long as healthy
	// reports the main loop alive, until ctx is done.
	Watchdog(ctx context.Context, healthy func() bool) error
}

// LevelSetter changes the level of the daemon's log, at once.
type LevelSetter interface {
	Set(zerolog.Level)
}

// Frontend serves the running desks to the outside (the HTTP API).
type Frontend interface {
	// Refuse begins the shutdown: from now on, requests that would change
	// anything are refused.
	Refuse()
	// Stop stops serving; requests in flight get timeout to finish.
	Stop(timeout time.Duration) error
	// Errs delivers an error if the front end stops serving on its own.
	Errs() <-chan error
}

// DaemonOptions configures a Daemon. Config, Clock and Bus are required.
type DaemonOptions struct {
	// Config is the config to start on, as loaded.
	Config *config.Config
	// Rejected are the desk files refused when Config was loaded
	// (config.LoadKeeping): Run announces them and shows them as the
	// rejections of a reload are, and their desks are not started.
	Rejected []config.Rejected
	// Clock is deskd's clock.
	Clock clock.Clock
	// Bus receives every event of the daemon and its desks. The shutdown
	// closes it, once the front end has stopped, so that every event is
	// delivered (and logged) before the daemon's last line.
	Bus *event.Bus
	// Log is the daemon's log (the zero value logs nothing).
	Log zerolog.Logger
	// Level, if set, is told the new level when a reload changes
	// log.level.
	Level LevelSetter
	// Notify, if set, is told what the daemon is doing.
	Notify Notifier
	// Watchdog is the service manager's watchdog interval (0: none). The
	// main loop beats at a quarter of it, and Notify.Watchdog pings while
	// the last beat is less than half of it old.
	Watchdog time.Duration
	// Serve, if set, starts the front end once every desk has started,
	// the config is watched and the spool folders take files: it serves
	// set, and check answers what a reload would change (Daemon.Check).
	// The daemon stops the front end in its shutdown; an error the front
	// end reports stops the daemon.
	Serve func(ctx context.Context, set *Set, check func() ConfigCheck) (Frontend, error)
	// ReleaseSignals, if set, is called once the daemon wants no more
	// signals: after the second SIGTERM or SIGINT, so that a third ends the
	// process at once (the default action).
	ReleaseSignals func()
	// FS, if set, is the file layer the desks' folders and trigger ledgers
	// write through (nil: the operating system's). Tests set a counting or
	// failing one (memory/durable/faultfs).
	FS durable.FS
	// Statfs, if set, reads the state folder's free space for its probe
	// (SpaceProbe; nil: the operating system's). Tests give fake numbers.
	Statfs Statfs
	// NATS is the connection to NATS (the nats section), which a cluster
	// (the cluster section) needs: its JetStream holds the desks' leases,
	// WALs and snapshots. Without a cluster section it is not used.
	NATS *nats.Conn
	// CompactAfter is how many WAL records of a desk its owner lets gather
	// since the desk's last snapshot before it compacts it (a cluster
	// host; 0: DefaultCompactAfter).
	CompactAfter int
}

// Daemon is the running daemon: every desk of the config, started,
// stopped and restarted as the config changes, the config watch, the
// spool folders and the front end. Run runs it once. Every desk's model
// clients share one router.Pool of kept-alive connections.
type Daemon struct {
	o DaemonOptions

	// cur is the config in force. Check reads it; only the main loop
	// stores it.
	cur   atomic.Pointer[config.Config]
	fleet *fleet
	spool *spool
	front Frontend
	watch watch
	stop  *stopState
	hb    *heartbeat
	ready chan struct{}  // closed when the main loop starts
	group *durable.Group // the desks' file layer; closed when Run returns
	cl    *clusterHost   // the cluster part (clustered.go); nil without a cluster section

	watchdogEnd context.CancelFunc
	watchdog    sync.WaitGroup

	// terms counts SIGTERM and SIGINT: the first stops deskd, the second
	// cuts running turns short.
	terms int
}

// watch is the daemon's watch of the config files.
type watch struct {
	w    *config.Watcher
	stop context.CancelFunc
	done chan struct{}
}

// NewDaemon returns a daemon that will run the desks of o.Config.
func NewDaemon(o DaemonOptions) (*Daemon, error) {
	if o.Config == nil || o.Clock == nil || o.Bus == nil {
		return nil, errors.New("daemon: a config, a clock and a bus are required")
	}
	if o.Notify == nil {
		o.Notify = nopNotifier{}
	}
	d := &Daemon{o: o, stop: newStopState(), hb: newHeartbeat(o.Clock), ready: make(chan struct{})}
	d.cur.Store(o.Config)
	d.fleet = newFleet(o.Clock, o.Bus, o.Log)
	// The desks' synced appends share their fsyncs (memory/durable.Group).
	d.group = durable.NewGroup(o.FS)
	d.fleet.fsys = d.group
	// One pool of model connections for every desk, sized for them (and
	// grown when a reload adds desks).
	d.fleet.pool = router.NewPool(len(o.Config.Desks), nil)
	d.fleet.acting = newActing(o.Clock, o.Bus, o.Log)
	d.fleet.acting.host.Configure(o.Config.MCPServers)
	d.fleet.space = &SpaceProbe{Dir: o.Config.StateDir, Clock: o.Clock, Bus: o.Bus, Statfs: o.Statfs}
	d.spool = &spool{dir: InboxDir(o.Config.StateDir), set: d.fleet.set, clk: o.Clock, bus: o.Bus, log: o.Log}
	var err error
	if d.cl, err = newClusterHost(o.Config, o.NATS, d.group, o.Clock, o.Bus, o.Log, d.fleet.set, o.CompactAfter); err != nil {
		return nil, err
	}
	if d.cl != nil { // each desk's folder written only while this host owns it, each write replicated
		d.fleet.fsys = d.cl.repl
	}
	return d, nil
}

// Approvals returns the tool calls of every desk that wait for an
// operator's decision, to list and decide on (the API's).
func (d *Daemon) Approvals() *approval.Queue { return d.fleet.acting.queue }

// MCPServersUp returns each configured MCP server, and whether it is up
// now (the metrics' deskd_mcp_server_up).
func (d *Daemon) MCPServersUp() map[string]bool {
	out := map[string]bool{}
	for _, s := range d.fleet.acting.host.Status() {
		out[s.Name] = s.State == mcphost.StateUp
	}
	return out
}

// FreeSpace returns the free bytes of the state folder's file system at
// the probe's last look (deskd_state_free_bytes); ok is false before one.
func (d *Daemon) FreeSpace() (free uint64, ok bool) { return d.fleet.space.FreeBytes() }

// Set returns the running desks: what the front end, the spool and the
// metrics see.
func (d *Daemon) Set() *Set { return d.fleet.set }

// Ready is closed once every desk has started and the daemon serves (its
// main loop runs).
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Run runs every desk of the config until ctx is done or SIGTERM or
// SIGINT comes on sigs, reloading the config on SIGHUP and when its files
// change, and then stops in order: the service manager is told (Stopping);
// the front end refuses changes and the spool stops taking files; the
// config watch stops; a running turn gets shutdown_timeout to finish (a
// second SIGTERM or SIGINT cuts it short), then is cancelled and recorded
// interrupted; the session files and ledgers are closed; the front end
// stops; the bus is drained; the state folder is unlocked; "deskd stopped"
// is the last line.
//
// A desk that fails to start (a damaged file of its folder, say) does not
// stop the others, nor Run: it is a failed desk of the set (Set.Fail),
// announced as desk.failed, and the next reload (or restart) tries it
// again.
//
// Whatever a goroutine is doing (a read that never returns, say), the
// shutdown has a hard deadline: shutdown_timeout plus stopGrace after it
// began (the first SIGTERM or SIGINT, ctx done, or the daemon stopping on
// its own). At the deadline Run logs the step of the shutdown still
// running and every goroutine's stack, and returns an error without
// waiting any longer; the process should then exit, which ends what was
// left. Every file deskd writes is crash safe, so that loses nothing.
func (d *Daemon) Run(ctx context.Context, sigs <-chan os.Signal) error {
	defer d.group.Close()
	cfg := d.cur.Load()
	done := make(chan error, 1)
	go func() { done <- d.run(ctx, sigs) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-d.stop.begun:
	}
	limit := cfg.ShutdownTimeout + stopGrace
	deadline := d.o.Clock.NewTimer(limit)
	defer deadline.Stop()
	select {
	case err := <-done:
		return err
	case <-deadline.C():
	}
	step := d.stop.Step()
	d.o.Log.Error().Dur("shutdown_timeout", cfg.ShutdownTimeout).Dur("deadline", limit).Str("still_running", step).
		Str("goroutines", goroutineStacks()).
		Msg("deskd did not stop by the shutdown deadline: exiting without finishing the shutdown")
	return fmt.Errorf("the shutdown did not finish within %s (shutdown_timeout %s + %s): still %s",
		limit, cfg.ShutdownTimeout, stopGrace, step)
}

// run is Run's body: it runs the desks, then shuts down in order, telling
// d.stop where it is.
func (d *Daemon) run(ctx context.Context, sigs <-chan os.Signal) (err error) {
	cfg, clk, log := d.cur.Load(), d.o.Clock, d.o.Log
	logConfigRead(log, cfg)
	lock, err := memory.LockStateDir(cfg.StateDir, clk.Now())
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			_ = lock.Release()
		}
	}()

	// The free-space probe looks from the start (a desk's first write may
	// be the one that fails) to the shutdown's end.
	spaceCtx, endSpace := context.WithCancel(context.WithoutCancel(ctx))
	spaceDone := make(chan struct{})
	go func() { defer close(spaceDone); d.fleet.space.Run(spaceCtx) }()
	stopSpace := func() { endSpace(); <-spaceDone }
	defer stopSpace() // idempotent: the shutdown stops it first

	// The desks stop when the shutdown says, after the front end refuses
	// triggers, not when ctx ends.
	deskCtx, stopDesks := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopDesks(nil)

	names := sortedNames(cfg.Desks)
	log.Info().Str("config", cfg.Path).Str("state_dir", cfg.StateDir).Strs("desks", names).
		Time("clock_start", clk.Now()).Msg("deskd starting")
	d.snapshotConfig(cfg, "start")
	d.noteRejected(cfg, rejectedProblems(d.o.Rejected))
	d.logRejected(d.o.Rejected)
	_ = d.o.Notify.Status(fmt.Sprintf("starting %s: %s", plural(len(names), "desk"), strings.Join(names, ", ")))
	d.stop.Set("starting the desks")
	stopCalendars := func() {}
	start := names
	if d.cl != nil { // a desk runs only once its lease is won (clustered.go)
		d.cl.standBy(names)
		start = nil
	}
	d.startDesks(ctx, deskCtx, cfg, start)
	var runErr error
	if ctx.Err() == nil {
		d.warnAhead(cfg)
		stopCalendars = d.watchCalendars(deskCtx) // calendar.ending, at start and each new trading date
		// Watching starts before the front end: an edit from then on is
		// reloaded.
		d.stop.Set("starting the config watch, the spool folders and the API")
		d.startWatch(ctx, cfg)
		runErr = d.startFrontend(ctx)
		if runErr == nil && d.cl != nil {
			d.cl.start(ctx, apiAddr(d.front)) // the stores opened, it contends for the desks
		}
	}
	if runErr == nil && ctx.Err() == nil {
		d.stop.Set("in the main loop (serving, reloading the config)")
		runErr = d.serve(ctx, deskCtx, sigs)
	}

	// Shutdown, in order.
	d.stop.Stopping("refusing triggers and stopping the spool folders")
	if d.front != nil {
		d.front.Refuse() // before the line that says so
	}
	d.fleet.acting.queue.Close() // the calls that wait for an operator are denied: their turns end
	_ = d.o.Notify.Stopping(fmt.Sprintf("stopping: no new triggers; running turns get up to %s", cfg.ShutdownTimeout))
	log.Info().Dur("shutdown_timeout", cfg.ShutdownTimeout).
		Msg("deskd stopping: the API refuses triggers, schedules stop, running turns get the shutdown timeout")
	d.spool.halt()
	if d.cl != nil {
		d.stop.Set("stopping the cluster's acquirers")
		d.cl.stopContending() // no desk is taken from now on
	}
	d.stop.Set("stopping the config watch")
	d.stopWatch()
	stopCalendars()
	d.stop.Set("waiting for the desks to stop (running turns, then their session files and ledgers)")
	d.fleet.stopAll(errors.New("deskd is shutting down"))
	d.drain(sigs)
	if d.cl != nil {
		d.stop.Set("releasing the desks' leases")
		d.cl.releaseAll() // every desk has stopped and closed its files: a standby takes each at once
	}
	d.fleet.pool.CloseIdleConnections()
	d.stop.Set("stopping the MCP servers")
	if cerr := d.fleet.acting.host.Close(); cerr != nil {
		log.Error().Err(cerr).Msg("stop the MCP servers")
	}
	d.stop.Set("stopping the API")
	if d.front != nil {
		if serr := d.front.Stop(frontendStop); serr != nil {
			log.Error().Err(serr).Msg("stop the API")
		}
	}
	d.stop.Set("stopping the watchdog, the free-space probe, the metrics and the event log")
	d.stopWatchdog()
	stopSpace()
	d.o.Bus.Close() // every event is logged before the last line
	d.stop.Set("unlocking the state folder")
	locked = false
	if rerr := lock.Release(); rerr != nil {
		rerr = fmt.Errorf("unlock %s: %w", cfg.StateDir, rerr)
		log.Error().Err(rerr).Msg("unlock the state folder")
		runErr = errors.Join(runErr, rerr)
	}
	if runErr != nil {
		log.Error().Err(runErr).Msg("deskd stopped")
		return runErr
	}
	log.Info().Msg("deskd stopped")
	return nil
}

// startDesks starts the desks named and waits for each to take triggers;
// a desk that fails is a failed desk of the set, and is taken out of the
// config in force (dropDesk), so that the next reload tries it again.
// A bounded number of workers (fleet.workers) open and start them, each one
// desk at a time from its folder's opening until it has started (its
// session restored), so that their I/O waits overlap; the bytes of the
// ledgers they read at once are bounded too (fleet.reading), so that few
// desks with big files are read at the same time. The desks that started
// are put in the set in name order. When ctx ends, no further desk is
// started.
func (d *Daemon) startDesks(ctx, deskCtx context.Context, cfg *config.Config, names []string) {
	f := d.fleet
	type result struct {
		run     *deskRun
		started bool
		err     error
	}
	results := make([]result, len(names))
	// The desks' parent folder is made once, before the workers race to
	// make it; a failure here is each desk's to report (prepare).
	if len(names) > 0 {
		_ = durable.MkdirAll(f.fsys, filepath.Dir(folderOf(cfg, names[0])), 0o750)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(f.workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				run, started, err := f.startOne(ctx, deskCtx, cfg, cfg.Desks[names[i]])
				results[i] = result{run, started, err}
			}
		}()
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, r := range results {
		switch {
		case r.err != nil:
			d.dropDesk(names[i])
		case r.started:
			f.admit(r.run)
		}
	}
}

// startFrontend starts the spool folders of the running desks, then the
// front end (Serve).
func (d *Daemon) startFrontend(ctx context.Context) error {
	if err := d.spool.start(ctx); err != nil {
		return err
	}
	if d.o.Serve == nil {
		return nil
	}
	front, err := d.o.Serve(ctx, d.fleet.set, d.Check)
	if err != nil {
		d.spool.halt()
		return err
	}
	d.front = front
	return nil
}

// serve tells the service manager the daemon is ready, then runs the main
// loop until ctx is done, the first SIGTERM or SIGINT, or a failure (the
// front end stops serving, a desk stops on its own). It reloads on SIGHUP
// and on changes of the config files. With a watchdog, the loop's
// heartbeat keeps the pings going; a stuck loop stops them.
func (d *Daemon) serve(ctx, deskCtx context.Context, sigs <-chan os.Signal) error {
	if iv := d.o.Watchdog; iv > 0 {
		wctx, end := context.WithCancel(ctx)
		d.watchdogEnd = end
		d.watchdog.Add(1)
		go func() {
			defer d.watchdog.Done()
			_ = d.o.Notify.Watchdog(wctx, func() bool { return d.hb.Fresh(iv / 2) })
		}()
		d.o.Log.Info().Dur("watchdog", iv).Msg("systemd watchdog on: pinging while the main loop is alive")
	}
	_ = d.o.Notify.Ready(d.statusLine("running") + refusedLine(d.o.Rejected))
	close(d.ready)
	for {
		d.hb.Beat()
		if stop, err := d.step(ctx, deskCtx, sigs); stop {
			return err
		}
	}
}

// step is one round of the main loop: it waits for one thing to do (or
// for the heartbeat's next beat) and does it. stop is true when the
// daemon must stop.
func (d *Daemon) step(ctx, deskCtx context.Context, sigs <-chan os.Signal) (stop bool, err error) {
	var beat <-chan time.Time
	if d.o.Watchdog > 0 {
		t := d.o.Clock.NewTimer(d.o.Watchdog / 4)
		defer t.Stop()
		beat = t.C()
	}
	var changes <-chan struct{}
	if d.watch.w != nil {
		changes = d.watch.w.Changes()
	}
	var frontErrs <-chan error
	if d.front != nil {
		frontErrs = d.front.Errs()
	}
	var leases <-chan leaseChange
	if d.cl != nil {
		leases = d.cl.changes
	}
	select {
	case <-ctx.Done():
		return true, nil
	case sig := <-sigs:
		if sig == syscall.SIGHUP {
			d.forgetRemoved()
			d.reload(ctx, deskCtx, "SIGHUP")
			return false, nil
		}
		d.terms++
		d.o.Log.Info().Str("signal", sig.String()).Msg("signal received")
		return true, nil
	case <-changes:
		d.forgetRemoved()
		d.reload(ctx, deskCtx, "the config files changed")
	case err := <-frontErrs:
		return true, err
	case run := <-d.fleet.exits:
		if err := d.exited(ctx, deskCtx, run); err != nil {
			return true, err
		}
	case ch := <-leases:
		d.leaseChanged(ctx, deskCtx, ch)
	case <-beat:
	}
	return false, nil
}

// exited handles the end of a desk's loop while the daemon runs: a desk
// the daemon stopped starts again if the config still has it (a restart,
// or a desk removed and added again meanwhile); a desk that stopped on its
// own is a failure, which stops the daemon.
func (d *Daemon) exited(ctx, deskCtx context.Context, run *deskRun) error {
	f := d.fleet
	f.ended(run)
	if run.fenced {
		d.fencedExit(ctx, run) // its lease was lost: this host stands by for it
		return nil
	}
	if run.failed {
		f.close(run) // a failed desk of the set: the next reload tries again
		d.releaseDesk(run.name)
		return nil
	}
	if !run.stopping {
		f.set.Remove(run.name)
		f.close(run)
		err := run.err
		if err == nil {
			err = fmt.Errorf("desk %s stopped on its own", run.name)
		}
		d.o.Log.Error().Err(err).Str("desk", run.name).Msg("desk stopped unexpectedly; deskd stops")
		return err
	}
	cfg := d.cur.Load()
	dc, ok := cfg.Desks[run.name]
	if !ok {
		f.set.Remove(run.name)
		f.close(run)
		d.releaseDesk(run.name)
		d.o.Log.Info().Str("desk", run.name).Str("folder", run.folder.Dir()).Msg("desk stopped; its files stay")
		return nil
	}
	if _, err := f.start(deskCtx, cfg, dc, run); err != nil {
		f.set.Remove(run.name)
		f.close(run)
		d.releaseDesk(run.name)
		d.dropDesk(run.name)
		d.o.Log.Error().Err(err).Str("desk", run.name).Msg("desk failed to restart; the next reload tries again")
		return nil
	}
	if err := f.awaitStarted(ctx, run); err != nil {
		// Its loop has ended; its exit, which comes next, closes its files.
		f.set.Remove(run.name)
		f.stop(run, errors.New("it failed to start"))
		d.dropDesk(run.name)
		return nil
	}
	d.o.Log.Info().Str("desk", run.name).Msg("desk restarted on its new config")
	_ = d.o.Notify.Status(d.statusLine("running"))
	return nil
}

// forgetRemoved forgets the failures of the desks whose files are gone
// from desks_dir: they are no longer desks of the config.
func (d *Daemon) forgetRemoved() {
	dir := d.cur.Load().DesksDir
	for name := range d.fleet.set.Failed() {
		if _, err := os.Lstat(filepath.Join(dir, name+".yaml")); errors.Is(err, fs.ErrNotExist) {
			d.fleet.set.Unfail(name)
			d.o.Log.Info().Str("desk", name).Msg("the failed desk's file was removed: it is no longer listed")
		}
	}
}

// dropDesk takes a desk that failed to start out of the config in force,
// so that the next reload sees it as new and tries again.
func (d *Daemon) dropDesk(name string) {
	cfg := *d.cur.Load()
	cfg.Desks = maps.Clone(cfg.Desks)
	delete(cfg.Desks, name)
	d.cur.Store(&cfg)
}

// drain waits for every desk's loop to end after stopAll, closing each
// desk's files, many desks at once (fleet.closeAll). A SIGTERM or SIGINT
// meanwhile (the second in all) cuts running turns short; after it, the
// daemon lets go of the signals (ReleaseSignals), so that a third ends the
// process at once.
func (d *Daemon) drain(sigs <-chan os.Signal) {
	f := d.fleet
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	closing := f.closeAll()
	defer closing.wait()
	for {
		select {
		case run := <-f.exits:
			closing.add(run)
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				d.o.Log.Info().Msg("SIGHUP during shutdown: not reloading")
				continue
			}
			d.terms++
			if d.terms < 2 {
				continue // the signal that began the shutdown, counted late
			}
			d.o.Log.Warn().Str("signal", sig.String()).Msg("second signal: running turns are cancelled now and recorded interrupted")
			_ = d.o.Notify.Status("stopping: running turns cancelled by a second signal")
			for _, run := range f.running() {
				run.desk.CutShort()
			}
			if d.o.ReleaseSignals != nil {
				d.o.ReleaseSignals()
			}
			sigs = nil
		case <-done: // every exit was received before
			return
		}
	}
}

// startWatch watches the config files of cfg and feeds the main loop.
func (d *Daemon) startWatch(ctx context.Context, cfg *config.Config) {
	w, err := config.NewWatcher(cfg.Path, cfg.DesksDir, d.o.Clock, config.DefaultDebounce, cfg.CalendarsDir)
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("the config files are not watched: reload with SIGHUP (systemctl reload deskd)")
		return
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	d.watch = watch{w: w, stop: stop, done: done}
	go func() { defer close(done); _ = w.Run(wctx) }()
	d.o.Log.Info().Strs("watching", w.Watching()).Msg("watching the config files: edits are reloaded")
}

// stopWatch stops watching the config files.
func (d *Daemon) stopWatch() {
	if d.watch.w == nil {
		return
	}
	d.watch.stop()
	<-d.watch.done
	d.watch = watch{}
}

// stopWatchdog stops the watchdog pings.
func (d *Daemon) stopWatchdog() {
	if d.watchdogEnd != nil {
		d.watchdogEnd()
	}
	d.watchdog.Wait()
}

// statusLine is the daemon's status for the service manager: what it is
// doing, its desks, the paused ones.
func (d *Daemon) statusLine(doing string) string {
	desks := d.fleet.set.List()
	var names, paused []string
	for _, dk := range desks {
		names = append(names, dk.Name())
		if dk.Paused() != nil {
			paused = append(paused, dk.Name())
		}
	}
	s := fmt.Sprintf("%s %s", doing, plural(len(desks), "desk"))
	if len(names) > 0 {
		s += ": " + strings.Join(names, ", ")
	}
	if len(paused) > 0 {
		s += "; paused: " + strings.Join(paused, ", ")
	}
	if failed := sortedNames(d.fleet.set.Failed()); len(failed) > 0 {
		s += "; failed to start: " + strings.Join(failed, ", ")
	}
	return s
}

// plural reads "1 desk", "2 desks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// nopNotifier is the Notifier of a daemon told nothing to notify.
type nopNotifier struct{}

func (nopNotifier) Ready(string) error                          { return nil }
func (nopNotifier) Reloading(string) error                      { return nil }
func (nopNotifier) Stopping(string) error                       { return nil }
func (nopNotifier) Status(string) error                         { return nil }
func (nopNotifier) Watchdog(context.Context, func() bool) error { return nil }
