package main

// deskd run: the daemon's command and its wiring (the logger, the bus and
// its log, the metrics, the daemon, the front end).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics"
)

// signalSource relays the signals the daemon handles (SIGHUP, SIGTERM,
// SIGINT) to a channel, from the call on, until stop is called. main
// passes one (daemonSignals); in-process runs have none, and end through
// their context alone.
type signalSource func() (sigs <-chan os.Signal, stop func())

func newRunCommand(stderr io.Writer, signals signalSource) *cobra.Command {
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
			return runDaemon(cmd.Context(), cfg, clk, stderr, signals)
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

// runDaemon wires the daemon of cfg and runs it (desk.Daemon.Run) until
// ctx is done or the signals stop it: the logger, the bus and its log,
// the metrics, systemd's notifier, and the HTTP API as the front end.
func runDaemon(ctx context.Context, cfg *config.Config, clk clock.Clock, stderr io.Writer, signals signalSource) error {
	log, level, err := newLogger(cfg.Log, stderr, clk)
	if err != nil {
		return err
	}
	bus := event.New()
	defer bus.Close() // the daemon's shutdown closes it first
	stopLog := desk.LogEvents(bus, log)
	defer stopLog()
	met := metrics.New(bus)
	defer met.Close()

	watchdog, err := watchdogInterval()
	if err != nil {
		log.Warn().Err(err).Msg("systemd watchdog: WATCHDOG_USEC is not usable; no watchdog pings")
	}
	var (
		sigs    <-chan os.Signal
		release func()
	)
	if signals != nil {
		sigs, release = signals()
		defer release()
	}
	d, err := desk.NewDaemon(desk.DaemonOptions{
		Config: cfg, Clock: clk, Bus: bus, Log: log, Level: level, Notify: newNotifier(clk), Watchdog: watchdog,
		Serve: func(ctx context.Context, set *desk.Set, check func() desk.ConfigCheck) (desk.Frontend, error) {
			return startAPI(ctx, cfg, clk, bus, log, set, check, map[string]http.Handler{"GET /metrics": met.Handler()})
		},
		ReleaseSignals: release,
	})
	if err != nil {
		return err
	}
	met.SetGauges(metrics.DeskGauges(d.Set()))
	return d.Run(ctx, sigs)
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

var _ desk.LevelSetter = (*levelFilter)(nil)

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
