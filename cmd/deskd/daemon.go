package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

func newRunCommand(stderr io.Writer) *cobra.Command {
	var path, clockStart string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon: every desk of the config, until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			clk := clock.Real()
			if clockStart != "" {
				start, err := parseClockStart(clockStart, time.Now())
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				clk = clock.StartingAt(start)
			}
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			return runDaemon(cmd.Context(), cfg, clk, stderr)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().StringVar(&clockStart, "clock-start", "", "start deskd's clock at this RFC3339 instant and run it at real speed (rehearsals, tests)")
	return cmd
}

// The years of --clock-start (UTC), first and last: an instant outside
// them is a typing mistake, and one too far from now cannot be reached as
// an offset of the wall clock (a time.Duration spans about 292 years, and
// time.Until saturates rather than failing: year 1 would start the clock
// in 1734).
const (
	minClockYear = 1970
	maxClockYear = 2199
)

// parseClockStart reads --clock-start: an RFC3339 instant from 1970 to
// 2199 whose offset from now fits a time.Duration.
func parseClockStart(s string, now time.Time) (time.Time, error) {
	start, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--clock-start %q: want RFC3339, such as 2026-03-01T23:59:00+05:30", s)
	}
	if y := start.UTC().Year(); y < minClockYear || y > maxClockYear {
		return time.Time{}, fmt.Errorf("--clock-start %s: out of range: want an instant in the years %d to %d",
			s, minClockYear, maxClockYear)
	}
	if d := start.Sub(now); !now.Add(d).Equal(start) {
		return time.Time{}, fmt.Errorf("--clock-start %s: too far from now (%s) for deskd's clock to reach", s, now.UTC().Format(time.RFC3339))
	}
	return start, nil
}

// newLogger returns the daemon's logger, writing to w in the configured
// format, and the filter that holds its level: a reload changes the level
// through it (zerolog's own level is fixed per logger value, and its
// global level is a package global).
func newLogger(cfg config.Log, w io.Writer, clk clock.Clock) (zerolog.Logger, *levelFilter, error) {
	level, err := zerolog.ParseLevel(cfg.Level)
	if err != nil {
		return zerolog.Logger{}, nil, fmt.Errorf("log level %q: %w", cfg.Level, err)
	}
	if cfg.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	f := &levelFilter{w: w}
	f.Set(level)
	return zerolog.New(f).Level(zerolog.TraceLevel).With().Timestamp().Logger().Hook(clockHook{clk}), f, nil
}

// levelFilter passes on the log lines at or above its level, which may be
// changed at any time. zerolog hands it each line with its level
// (zerolog.LevelWriter); a line without a level always passes.
type levelFilter struct {
	w     io.Writer
	level atomic.Int32
}

// Set changes the level.
func (f *levelFilter) Set(l zerolog.Level) { f.level.Store(int32(l)) }

// Level returns the level.
func (f *levelFilter) Level() zerolog.Level { return zerolog.Level(f.level.Load()) }

func (f *levelFilter) Write(p []byte) (int, error) { return f.w.Write(p) }

func (f *levelFilter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l != zerolog.NoLevel && l < f.Level() {
		return len(p), nil
	}
	return f.w.Write(p)
}

// clockHook stamps each line with deskd's clock, which --clock-start may
// have moved, beside zerolog's wall-clock "time".
type clockHook struct{ clk clock.Clock }

func (h clockHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Time("clock", h.clk.Now())
}

// runDaemon runs every desk of cfg until ctx is done or SIGTERM or SIGINT
// comes, reloading the config on SIGHUP and when its files change, and
// then stops in order: systemd is told (STOPPING=1); the API answers 503
// to mutations and the spool stops taking files; the schedules stop; a
// running turn gets shutdown_timeout to finish (a second SIGTERM or SIGINT
// cuts it short), then is cancelled and recorded interrupted; the session
// files and ledgers are closed; the API stops; the event log is drained;
// the state folder is unlocked; "deskd stopped" is the last line.
//
// A desk that fails to start is logged at once, and deskd stops and
// returns the error (so that systemd's Restart= tries again).
//
// Whatever a goroutine is doing (a read that never returns, say), the
// shutdown has a hard deadline: shutdown_timeout plus stopGrace after it
// began (the first SIGTERM or SIGINT, ctx done, or deskd stopping on its
// own). At the deadline runDaemon logs the step of the shutdown still
// running and every goroutine's stack, and returns an error without
// waiting any longer; main then exits non-zero, which ends what was left.
// Every file deskd writes is crash safe, so that loses nothing.
func runDaemon(ctx context.Context, cfg *config.Config, clk clock.Clock, stderr io.Writer) error {
	log, level, err := newLogger(cfg.Log, stderr, clk)
	if err != nil {
		return err
	}
	st := newStopState()
	done := make(chan error, 1)
	go func() { done <- runDesks(ctx, cfg, clk, log, level, st) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-st.begun:
	}
	limit := cfg.ShutdownTimeout + stopGrace
	deadline := clk.NewTimer(limit)
	defer deadline.Stop()
	select {
	case err := <-done:
		return err
	case <-deadline.C():
	}
	step := st.Step()
	log.Error().Dur("shutdown_timeout", cfg.ShutdownTimeout).Dur("deadline", limit).Str("still_running", step).
		Str("goroutines", goroutineStacks()).
		Msg("deskd did not stop by the shutdown deadline: exiting without finishing the shutdown")
	return fmt.Errorf("the shutdown did not finish within %s (shutdown_timeout %s + %s): still %s",
		limit, cfg.ShutdownTimeout, stopGrace, step)
}

// stopGrace is how long past shutdown_timeout (which the running turns
// get) a shutdown may take before its hard deadline: for cutting the turns
// short, closing the files, stopping the API (up to 5 s) and draining the
// event log. With the default shutdown_timeout, 30 s + 10 s stays below
// systemd's TimeoutStopSec (45 s).
const stopGrace = 10 * time.Second

// maxStacks bounds the goroutine stacks logged at the shutdown deadline.
const maxStacks = 256 << 10

// goroutineStacks returns every goroutine's stack, goroutines of the same
// stack counted once, cut at maxStacks.
func goroutineStacks() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	s := b.String()
	if len(s) > maxStacks {
		s = s[:maxStacks] + "\n[cut]"
	}
	return s
}

// stopState is what the daemon is doing, for the shutdown deadline: the
// step it is in, and whether the shutdown has begun.
type stopState struct {
	mu    sync.Mutex
	step  string
	begun chan struct{} // closed when the shutdown begins
}

func newStopState() *stopState {
	return &stopState{step: "starting", begun: make(chan struct{})}
}

// Set records the step the daemon is in now.
func (s *stopState) Set(step string) {
	s.mu.Lock()
	s.step = step
	s.mu.Unlock()
}

// Step returns the step the daemon is in.
func (s *stopState) Step() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}

// Stopping records that the shutdown has begun, in step.
func (s *stopState) Stopping(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = step
	select {
	case <-s.begun:
	default:
		close(s.begun)
	}
}

// runDesks is runDaemon's body: it runs the desks, then shuts down in order,
// telling st where it is.
func runDesks(ctx context.Context, cfg *config.Config, clk clock.Clock, log zerolog.Logger, level *levelFilter, st *stopState) (err error) {
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
	// SIGHUP reloads. SIGTERM and SIGINT are counted here as well as by
	// main's context: the first stops deskd, a second cuts running turns
	// short. signal.Notify makes each signal reach this channel whatever
	// main does with its own.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	bus := event.New()
	defer bus.Close()
	stopLog := desk.LogEvents(bus, log)
	defer stopLog()
	met := metrics.New(bus)
	defer met.Close()

	dm := &supervisor{clk: clk, bus: bus, log: log, level: level, notify: newNotifier(clk), hb: newHeartbeat(clk)}
	dm.cur.Store(cfg)
	dm.fleet = newFleet(clk, bus, log)
	met.SetGauges(metrics.DeskGauges(dm.fleet.set))

	// The desks stop when runDaemon says, after the API refuses triggers,
	// not when ctx ends.
	deskCtx, stopDesks := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopDesks(nil)

	names := sortedNames(cfg.Desks)
	log.Info().Str("config", cfg.Path).Str("state_dir", cfg.StateDir).Strs("desks", names).
		Time("clock_start", clk.Now()).Msg("deskd starting")
	dm.snapshotConfig(cfg, "start")
	_ = dm.notify.Status(fmt.Sprintf("starting %s: %s", plural(len(names), "desk"), strings.Join(names, ", ")))
	st.Set("starting the desks")
	runErr := dm.startDesks(ctx, deskCtx, cfg, names)
	if runErr == nil && ctx.Err() == nil {
		// Watching starts before "deskd ready": an edit from then on is
		// reloaded.
		st.Set("starting the config watch, the spool folders and the API")
		dm.startWatch(ctx, cfg)
		dm.svc, runErr = startServices(ctx, cfg, clk, bus, log, dm.fleet.set, dm.check,
			map[string]http.Handler{"GET /metrics": met.Handler()})
	}
	if runErr == nil && ctx.Err() == nil {
		st.Set("in the main loop (serving, reloading the config)")
		runErr = dm.serve(ctx, deskCtx, sigs)
	}

	// Shutdown, in order.
	st.Stopping("refusing triggers and stopping the spool folders")
	_ = dm.notify.Stopping(fmt.Sprintf("stopping: no new triggers; running turns get up to %s", cfg.ShutdownTimeout))
	log.Info().Dur("shutdown_timeout", cfg.ShutdownTimeout).
		Msg("deskd stopping: the API refuses triggers, schedules stop, running turns get the shutdown timeout")
	if dm.svc != nil {
		dm.svc.Refuse()
	}
	st.Set("stopping the config watch")
	dm.stopWatch()
	st.Set("waiting for the desks to stop (running turns, then their session files and ledgers)")
	dm.fleet.stopAll(errors.New("deskd is shutting down"))
	dm.drain(sigs)
	st.Set("stopping the API")
	if dm.svc != nil {
		if serr := dm.svc.Stop(5 * time.Second); serr != nil {
			log.Error().Err(serr).Msg("stop the API")
		}
	}
	st.Set("stopping the watchdog, the metrics and the event log")
	dm.stopWatchdog()
	met.Close()
	stopLog()
	bus.Close() // every event is logged before the last line
	st.Set("unlocking the state folder")
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

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// buildDesk wires one desk on its (open) folder and ledger: its model
// route, router, curator, keeper and loop.
func buildDesk(cfg *config.Config, dc *config.Desk, folder *memory.Folder, ledger *triggers.Ledger, clk clock.Clock,
	bus *event.Bus) (*desk.Desk, *router.Router, *liveCurator, error) {
	settings, err := routerSettings(cfg, dc, folder, clk)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("desk %s: %w", dc.Name, err)
	}
	r, err := router.New(router.Options{Desk: dc.Name, Folder: folder, Clock: clk, Day: cfg.Day, Bus: bus, Settings: settings})
	if err != nil {
		return nil, nil, nil, err
	}
	var (
		cur  keeper.Curator
		live *liveCurator
	)
	if dc.Curator.Enabled {
		onTorn := func(t durable.Torn) {
			event.Publish(bus, event.FileTorn{Header: event.Header{At: clk.Now(), Desk: dc.Name}, Path: t.Path, Offset: t.Offset, Bytes: t.Bytes, SavedTo: t.SavedTo})
		}
		live = &liveCurator{r: curator.Reviewer{Folder: folder, Model: r, Now: clk.Now, MaxChanges: dc.Curator.MaxChanges,
			ScheduleTexts: scheduleTexts(dc), OnTorn: onTorn}}
		cur = live
	}
	k := keeper.New(keeper.Options{
		Desk: dc.Name, Router: keeperRouter(cfg, dc, r, clk), Folder: folder, Curator: cur, Bus: bus, Clock: clk, Day: cfg.Day,
		Disabled: dc.Rollover == keeper.RolloverOff,
		Guard:    memory.FoldGuard{MaxBytes: dc.Memory.MaxBytes, MinKept: dc.Memory.MinKept},
	})
	d, err := newDesk(cfg, dc, folder, ledger, k, r, clk, bus) // services.go: queue, calendar, pause
	if err != nil {
		_ = r.Close()
		return nil, nil, nil, err
	}
	return d, r, live, nil
}

// liveCurator is a desk's skill curator whose settings a reload may
// change: each review works on a copy of the settings of its start.
type liveCurator struct {
	mu sync.Mutex
	r  curator.Reviewer
}

var _ keeper.Curator = (*liveCurator)(nil)

// Review runs the curator with the current settings.
func (c *liveCurator) Review(ctx context.Context, date memory.Date, session string) (memory.SkillReview, error) {
	c.mu.Lock()
	r := c.r
	c.mu.Unlock()
	return r.Review(ctx, date, session)
}

// set changes the settings of the next review.
func (c *liveCurator) set(dc *config.Desk) {
	c.mu.Lock()
	c.r.MaxChanges, c.r.ScheduleTexts = dc.Curator.MaxChanges, scheduleTexts(dc)
	c.mu.Unlock()
}
