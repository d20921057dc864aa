package main

// Wiring of the trigger side of the daemon: each desk's ledger and queue
// settings, and, once every desk has started, the spool folders and the
// HTTP API.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// keeperRouter is the router a desk's keeper works with: r, or for
// rollover: trading_day, r seen through the desk's calendar.
func keeperRouter(cfg *config.Config, dc *config.Desk, r *router.Router, clk clock.Clock) keeper.Router {
	if dc.Rollover == keeper.RolloverTradingDay {
		return desk.TradingDayRouter(r, cfg.CalendarOf(dc.Calendar), cfg.Day, clk)
	}
	return r
}

// newDesk makes the desk's loop on its ledger, with its queue settings,
// calendar and pause file.
func newDesk(cfg *config.Config, dc *config.Desk, folder *memory.Folder, ledger *triggers.Ledger, k *keeper.Keeper,
	r *router.Router, clk clock.Clock, bus *event.Bus) (*desk.Desk, error) {
	return desk.New(desk.Options{
		Name: dc.Name, Keeper: k, Router: r, Ledger: ledger, Schedules: cfg.Entries(dc), Clock: clk, Bus: bus,
		QueueLimit: dc.QueueLimit, Coalesce: dc.Coalesce.ByKey(), Calendar: cfg.CalendarOf(dc.Calendar),
		ShutdownTimeout: cfg.ShutdownTimeout, PauseFile: folder.Path(desk.PauseFile),
		RefusePaused: dc.PausedTriggers.Refuse(),
	})
}

// services are the spool and the API of a running daemon.
type services struct {
	api  *httpapi.Serving
	a    *httpapi.Server
	ring *httpapi.EventRing
	set  *desk.Set
	clk  clock.Clock
	bus  *event.Bus
	log  zerolog.Logger
	dir  string // the inbox root

	// The spool of the desks of the set; SetDesks starts it again when
	// the desks change.
	spoolNames []string
	spoolStop  context.CancelFunc
	spool      sync.WaitGroup
}

// startServices starts the spool folders and the API of the desks of set,
// and logs "deskd ready" with the addresses served. check answers
// GET /v1/config/diff; extra handlers (such as GET /metrics) join the API.
func startServices(ctx context.Context, cfg *config.Config, clk clock.Clock, bus *event.Bus, log zerolog.Logger,
	set *desk.Set, check func() desk.ConfigCheck, extra map[string]http.Handler) (*services, error) {
	s := &services{
		ring: httpapi.NewEventRing(bus, clk.Now(), httpapi.RingSize), set: set, clk: clk, bus: bus, log: log,
		dir: filepath.Join(cfg.StateDir, "inbox"),
	}
	// The operator's, the feeds' and the scraper's tokens (desk/httpapi).
	var token, feedToken, metricsToken string
	for _, f := range []struct {
		key, path string
		dst       *string
	}{{"auth_token_file", cfg.AuthTokenFile, &token}, {"feed_token_file", cfg.FeedTokenFile, &feedToken}, {"metrics_token_file", cfg.MetricsTokenFile, &metricsToken}} {
		if f.path == "" {
			continue
		}
		var err error
		if *f.dst, err = config.ReadAuthToken(f.path); err != nil {
			s.ring.Close()
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	if err := s.startSpool(ctx, set.Names()); err != nil {
		s.ring.Close()
		return nil, err
	}
	s.a = httpapi.New(httpapi.Options{Desks: set, Token: token, FeedToken: feedToken, MetricsToken: metricsToken, Clock: clk, Events: s.ring, Log: log, Check: check})
	for pattern, h := range extra {
		s.a.Handle(pattern, h)
	}
	ls, err := httpapi.Listen(cfg.Listens)
	if err != nil {
		s.stopSpool()
		s.ring.Close()
		return nil, err
	}
	s.api = httpapi.Serve(ctx, s.a, ls)
	log.Info().Strs("listen", s.api.Addrs()).Strs("desks", set.Names()).Bool("auth", token != "").Bool("feed_token", feedToken != "").
		Bool("metrics_token", metricsToken != "").
		Str("inbox", s.dir).Msg("deskd ready")
	return s, nil
}

// spoolSubmitError is what the spool hears of a desk's Submit: a desk
// that is restarting (to take a config change) or cannot write to its disk
// is "full" for the spool, which leaves the file in the inbox for its next
// look; any other error rejects the file.
func spoolSubmitError(name string, err error) error {
	switch {
	case errors.Is(err, desk.ErrStopped):
		return fmt.Errorf("%w (desk %s is restarting)", triggers.ErrQueueFull, name)
	case errors.Is(err, desk.ErrStorage):
		return fmt.Errorf("%w (desk %s cannot write to its disk: %v)", triggers.ErrQueueFull, name, err)
	}
	return err
}

// startSpool takes trigger files from the inboxes of the desks named.
func (s *services) startSpool(ctx context.Context, names []string) error {
	sp := &triggers.Spool{
		Dir: s.dir, Desks: names, Clock: s.clk,
		Submit: func(name, file string, r triggers.Request) error {
			d, ok := s.set.Get(name)
			if !ok {
				return fmt.Errorf("desk %s is not in the config any more", name)
			}
			_, err := d.Submit(r.Trigger(name, "inbox:"+file))
			return spoolSubmitError(name, err)
		},
		Rejected: func(name, file, reason string) {
			event.Publish(s.bus, event.InboxRejected{Header: event.Header{At: s.clk.Now(), Desk: name}, File: file, Reason: reason})
		},
		Failed: func(name, file string, err error) {
			s.log.Error().Err(err).Str("desk", name).Str("file", file).Msg("inbox file left in place")
		},
	}
	if err := sp.Open(); err != nil {
		return err
	}
	spoolCtx, stop := context.WithCancel(ctx)
	s.spoolStop, s.spoolNames = stop, names
	s.spool.Add(1)
	go func() { defer s.spool.Done(); sp.Run(spoolCtx) }()
	return nil
}

// SetDesks starts the spool again on the set's desks, when they changed.
func (s *services) SetDesks(ctx context.Context) error {
	names := s.set.Names()
	if slices.Equal(names, s.spoolNames) {
		return nil
	}
	s.stopSpool()
	return s.startSpool(ctx, names)
}

// Errs delivers an error if the API stops serving on its own.
func (s *services) Errs() <-chan error { return s.api.Errs() }

func (s *services) stopSpool() {
	if s.spoolStop != nil {
		s.spoolStop()
		s.spool.Wait()
		s.spoolStop, s.spoolNames = nil, nil
	}
}

// Refuse begins the shutdown: the API answers 503 to mutations and to
// GET /healthz, and the spool stops taking files.
func (s *services) Refuse() {
	s.a.Refuse()
	s.stopSpool()
}

// Stop closes the API (in-flight requests get timeout; event streams end)
// and the spool.
func (s *services) Stop(timeout time.Duration) error {
	err := s.api.Shutdown(timeout)
	s.stopSpool()
	s.ring.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the streams were cut: nothing was lost
	}
	return err
}
