package main

// The front end of deskd run: the HTTP API (desk/httpapi) over the daemon's
// running desks, as a desk.Frontend.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/audit"
	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/console"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/natsconn"
)

// apiFrontend is the HTTP API of a running daemon.
type apiFrontend struct {
	api           *httpapi.Server
	srv           *httpapi.Serving
	ring          *httpapi.EventRing
	removeRuntime func() error
	log           zerolog.Logger
}

var _ desk.Frontend = (*apiFrontend)(nil)

// startAPI serves the API of the desks of set on cfg's listeners, and logs
// "deskd ready" with the addresses served; ring, made before the desks
// started, replays their start on GET /v1/events. check answers
// GET /v1/config/diff; extra handlers (such as GET /metrics) join the API;
// approvals lists and decides the tool calls that wait for an operator;
// allowedHosts returns allowed_hosts in force, which the Host rule of
// every TCP listener reads at each request (a reload applies at once);
// notifyState the notification targets' state (nil without any).
func startAPI(ctx context.Context, cfg *config.Config, clk clock.Clock, ring *httpapi.EventRing, log zerolog.Logger,
	set *desk.Set, check func() desk.ConfigCheck, extra map[string]http.Handler, nc *natsconn.Conn, approvals httpapi.Approvals,
	allowedHosts func() []string, notifyState func() []httpapi.NotifyStatus) (desk.Frontend, error) {
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
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	var host string // this host's cluster name, which GET /v1/proof names
	if cfg.Cluster != nil {
		host = cfg.Cluster.Host
	}
	a := httpapi.New(httpapi.Options{Desks: set, Token: token, FeedToken: feedToken, MetricsToken: metricsToken, Clock: clk, Events: ring, Log: log, Check: check, NATS: httpapi.NATSStatusOf(nc),
		Notify: notifyState, Approvals: approvals, Console: console.Handler(), Listen: cfg.Listens, AllowedHosts: allowedHosts, Host: host, Files: httpapi.Files{Day: cfg.Day, Version: buildinfo.Version(),
			AuditConfig: func(name string) (audit.Config, error) { return audit.ConfigOf(cfg, name) }}})
	for pattern, h := range extra {
		a.Handle(pattern, h)
	}
	ls, err := httpapi.Listen(cfg.Listens)
	if err != nil {
		return nil, err
	}
	srv := httpapi.Serve(ctx, a, ls)
	f := &apiFrontend{api: a, srv: srv, ring: ring, log: log}
	rt := httpapi.Runtime{PID: os.Getpid(), Listen: srv.Addrs(), Config: cfg.Path, StartedAt: clk.Now(), Version: buildinfo.Version()}
	if f.removeRuntime, err = httpapi.WriteRuntime(cfg.StateDir, rt); err != nil {
		log.Warn().Err(err).Msg("the CLI will not find this deskd by its runtime file, only by listen or --addr")
	}
	log.Info().Strs("listen", srv.Addrs()).Strs("desks", set.Names()).Bool("auth", token != "").Bool("feed_token", feedToken != "").
		Bool("metrics_token", metricsToken != "").
		Str("inbox", desk.InboxDir(cfg.StateDir)).Str("runtime", httpapi.RuntimePath(cfg.StateDir)).
		Strs("schedules_ahead", desk.AheadNames(set, clk.Now())).Msg("deskd ready")
	return f, nil
}

// Refuse begins the shutdown: the API answers 503 to mutations and to
// GET /healthz.
func (f *apiFrontend) Refuse() { f.api.Refuse() }

// Addrs are the addresses the API serves on (a cluster's other hosts
// send a desk's clients to the first TCP one).
func (f *apiFrontend) Addrs() []string { return f.srv.Addrs() }

// Errs delivers an error if the API stops serving on its own.
func (f *apiFrontend) Errs() <-chan error { return f.srv.Errs() }

// Stop closes the API: in-flight requests get timeout; event streams end.
func (f *apiFrontend) Stop(timeout time.Duration) error {
	err := f.srv.Shutdown(timeout)
	f.ring.Close()
	if f.removeRuntime != nil {
		if rerr := f.removeRuntime(); rerr != nil {
			f.log.Error().Err(rerr).Msg("remove the runtime file")
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the streams were cut: nothing was lost
	}
	return err
}
