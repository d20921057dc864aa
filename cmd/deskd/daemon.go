package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
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
				start, err := time.Parse(time.RFC3339, clockStart)
				if err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--clock-start %q: want RFC3339, such as 2026-03-01T23:59:00+05:30", clockStart)}
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

// newLogger returns the daemon's logger, writing to w in the configured
// format at the configured level.
func newLogger(cfg config.Log, w io.Writer, clk clock.Clock) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.Level)
	if err != nil {
		return zerolog.Logger{}, fmt.Errorf("log level %q: %w", cfg.Level, err)
	}
	if cfg.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger().Hook(clockHook{clk}), nil
}

// clockHook stamps each line with deskd's clock, which --clock-start may
// have moved, beside zerolog's wall-clock "time".
type clockHook struct{ clk clock.Clock }

func (h clockHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Time("clock", h.clk.Now())
}

// runDaemon runs every desk of cfg until ctx is done, then stops them in
// order: no new turn starts, running turns get the shutdown timeout, files
// are closed, the bus is drained and the state folder unlocked.
func runDaemon(ctx context.Context, cfg *config.Config, clk clock.Clock, stderr io.Writer) (err error) {
	log, err := newLogger(cfg.Log, stderr, clk)
	if err != nil {
		return err
	}
	lock, err := memory.LockStateDir(cfg.StateDir, clk.Now())
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lock.Release(); rerr != nil && err == nil {
			err = fmt.Errorf("unlock %s: %w", cfg.StateDir, rerr)
		}
	}()

	bus := event.New()
	defer bus.Close()
	stopLog := desk.LogEvents(bus, log)
	defer stopLog()

	names := make([]string, 0, len(cfg.Desks))
	for name := range cfg.Desks {
		names = append(names, name)
	}
	sort.Strings(names)

	var desks []*desk.Desk
	var routers []*router.Router
	defer func() {
		for _, r := range routers {
			if cerr := r.Close(); cerr != nil {
				log.Error().Err(cerr).Msg("close session")
			}
		}
	}()
	for _, name := range names {
		d, r, err := buildDesk(cfg, cfg.Desks[name], clk, bus)
		if err != nil {
			return err
		}
		desks, routers = append(desks, d), append(routers, r)
	}

	log.Info().Str("config", cfg.Path).Str("state_dir", cfg.StateDir).Strs("desks", names).
		Time("clock_start", clk.Now()).Msg("deskd starting")
	runCtx, stopDesks := context.WithCancel(ctx)
	defer stopDesks()
	var wg sync.WaitGroup
	errs := make([]error, len(desks))
	for i, d := range desks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.Run(runCtx)
		}()
	}
	// The spool and the HTTP API start once every desk takes triggers;
	// they log "deskd ready" (services.go).
	svc, err := startServices(runCtx, cfg, clk, bus, log, desks, nil)
	if err != nil {
		stopDesks()
		wg.Wait()
		return errors.Join(append(errs, err)...)
	}
	select {
	case <-ctx.Done():
	case serr := <-svc.Errs():
		errs = append(errs, serr)
	}
	log.Info().Msg("deskd stopping: no new turns; running turns get the shutdown timeout")
	if serr := svc.Stop(5 * time.Second); serr != nil {
		log.Error().Err(serr).Msg("stop the API")
	}
	stopDesks()
	wg.Wait()
	log.Info().Msg("deskd stopped")
	return errors.Join(errs...)
}

// buildDesk wires one desk: its folder, model route, router, curator,
// keeper and loop.
func buildDesk(cfg *config.Config, dc *config.Desk, clk clock.Clock, bus *event.Bus) (*desk.Desk, *router.Router, error) {
	folder, err := memory.OpenFolder(filepath.Join(cfg.StateDir, "desks", dc.Name), dc.Name, clk.Now)
	if err != nil {
		return nil, nil, fmt.Errorf("desk %s: %w", dc.Name, err)
	}
	settings, err := routerSettings(cfg, dc, folder, clk)
	if err != nil {
		return nil, nil, fmt.Errorf("desk %s: %w", dc.Name, err)
	}
	r, err := router.New(router.Options{Desk: dc.Name, Folder: folder, Clock: clk, Day: cfg.Day, Bus: bus, Settings: settings})
	if err != nil {
		return nil, nil, err
	}
	var cur keeper.Curator
	if dc.Curator.Enabled {
		cur = &curator.Reviewer{Folder: folder, Model: r, Now: clk.Now, MaxChanges: dc.Curator.MaxChanges, ScheduleTexts: scheduleTexts(dc)}
	}
	k := keeper.New(keeper.Options{
		Desk: dc.Name, Router: keeperRouter(cfg, dc, r, clk), Folder: folder, Curator: cur, Bus: bus, Clock: clk, Day: cfg.Day,
		Disabled: dc.Rollover == config.RolloverOff,
		Guard:    memory.FoldGuard{MaxBytes: dc.Memory.MaxBytes, MinKept: dc.Memory.MinKept},
	})
	d, err := newDesk(cfg, dc, folder, k, r, clk, bus) // services.go: ledger, queue, calendar
	if err != nil {
		return nil, nil, err
	}
	return d, r, nil
}
