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
	"sync"
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

// keeperRouter is the router a desk's keeper works with: r, or for
// rollover: trading_day, r seen through the desk's calendar.
func keeperRouter(cfg *config.Config, dc *config.Desk, r *router.Router, clk clock.Clock) keeper.Router {
	if dc.Rollover == config.RolloverTradingDay {
		return desk.TradingDayRouter(r, cfg.CalendarOf(dc.Calendar), cfg.Day, clk)
	}
	return r
}

// newDesk opens the desk's trigger ledger and makes its loop.
func newDesk(cfg *config.Config, dc *config.Desk, folder *memory.Folder, k *keeper.Keeper, r *router.Router,
	clk clock.Clock, bus *event.Bus) (*desk.Desk, error) {
	ledger, err := triggers.OpenLedger(folder.Path(triggers.LedgerFile))
	if err != nil {
		return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
	}
	d, err := desk.New(desk.Options{
		Name: dc.Name, Keeper: k, Router: r, Ledger: ledger, Schedules: cfg.Entries(dc), Clock: clk, Bus: bus,
		QueueLimit: dc.QueueLimit, Coalesce: dc.Coalesce == config.CoalesceKey, Calendar: cfg.CalendarOf(dc.Calendar),
		ShutdownTimeout: cfg.ShutdownTimeout,
	})
	if err != nil {
		_ = ledger.Close()
		return nil, err
	}
	return d, nil
}

// services are the spool and the API of a running daemon.
type services struct {
	api   *apiServer
	ring  *eventRing
	stop  context.CancelFunc
	spool sync.WaitGroup
}

// startServices waits until every desk takes triggers (or has stopped),
// then starts the spool folders and the API, and logs "deskd ready" with
// the addresses served. extra handlers (such as GET /metrics) join the API.
func startServices(ctx context.Context, cfg *config.Config, clk clock.Clock, bus *event.Bus, log zerolog.Logger,
	desks []*desk.Desk, extra map[string]http.Handler) (*services, error) {
	s := &services{ring: newEventRing(bus, clk.Now(), eventRingSize)}
	for _, d := range desks {
		select {
		case <-d.Started():
		case <-d.Done():
		case <-ctx.Done():
			s.ring.Close()
			return nil, ctx.Err()
		}
	}
	var token string
	if cfg.AuthTokenFile != "" {
		var err error
		if token, err = config.ReadAuthToken(cfg.AuthTokenFile); err != nil {
			s.ring.Close()
			return nil, err
		}
	}
	byName := map[string]*desk.Desk{}
	names := make([]string, 0, len(desks))
	for _, d := range desks {
		byName[d.Name()] = d
		names = append(names, d.Name())
	}
	sp := &triggers.Spool{
		Dir: filepath.Join(cfg.StateDir, "inbox"), Desks: names, Clock: clk,
		Submit: func(name, file string, r triggers.Request) error {
			_, err := byName[name].Submit(r.Trigger(name, "inbox:"+file))
			return err
		},
		Rejected: func(name, file, reason string) {
			event.Publish(bus, event.InboxRejected{Header: event.Header{At: clk.Now(), Desk: name}, File: file, Reason: reason})
		},
		Failed: func(name, file string, err error) {
			log.Error().Err(err).Str("desk", name).Str("file", file).Msg("inbox file left in place")
		},
	}
	if err := sp.Open(); err != nil {
		s.ring.Close()
		return nil, err
	}
	spoolCtx, stop := context.WithCancel(ctx)
	s.stop = stop
	s.spool.Add(1)
	go func() { defer s.spool.Done(); sp.Run(spoolCtx) }()

	a := newAPI(apiOptions{Desks: desks, Token: token, Clock: clk, Events: s.ring, Log: log})
	for pattern, h := range extra {
		a.Handle(pattern, h)
	}
	ls, err := listenAPI(cfg.Listens)
	if err != nil {
		s.stopSpool()
		return nil, err
	}
	s.api = serveAPI(ctx, a, ls)
	log.Info().Strs("listen", s.api.Addrs()).Strs("desks", names).Bool("auth", token != "").
		Str("inbox", sp.Dir).Msg("deskd ready")
	return s, nil
}

// Errs delivers an error if the API stops serving on its own.
func (s *services) Errs() <-chan error { return s.api.Errs() }

func (s *services) stopSpool() {
	s.stop()
	s.spool.Wait()
	s.ring.Close()
}

// Stop closes the API (in-flight requests get timeout; event streams end)
// and the spool.
func (s *services) Stop(timeout time.Duration) error {
	err := s.api.Shutdown(timeout)
	s.stopSpool()
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the streams were cut: nothing was lost
	}
	return err
}
