package httpapi

// The front end of deskd run: the HTTP API over the daemon's running
// desks, as a desk.Frontend, with the runtime file that tells the CLI
// where it serves.

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
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/natsconn"
)

// FrontendOptions are what StartFrontend serves. Config, Clock, Events
// and Desks are required.
type FrontendOptions struct {
	// Config is the config in force at the start: its listen, its token
	// files (auth_token_file, feed_token_file, metrics_token_file), its
	// state_dir (the runtime file), its cluster.host (GET /v1/proof) and
	// what the desk page's endpoints need (the trading day, the audit's
	// config).
	Config *config.Config
	// Clock is deskd's clock.
	Clock clock.Clock
	// Events, made before the desks started, replays their start on
	// GET /v1/events; the front end's Stop closes it.
	Events *EventRing
	// Log receives "deskd ready" and the front end's own trouble.
	Log zerolog.Logger
	// Desks are the running desks.
	Desks *desk.Set
	// Check answers GET /v1/config/diff.
	Check func() desk.ConfigCheck
	// Handlers join the API, by pattern (such as "GET /metrics").
	Handlers map[string]http.Handler
	// NATS is the NATS connection whose state the status shows (nil:
	// none).
	NATS *natsconn.Conn
	// Approvals lists and decides the tool calls that wait for an
	// operator.
	Approvals Approvals
	// AllowedHosts returns allowed_hosts in force, which the Host rule of
	// every TCP listener reads at each request (a reload applies at once).
	AllowedHosts func() []string
	// Notify returns the notification targets' state (nil without any).
	Notify func() []NotifyStatus
	// Console is the web console served at GET / (nil: none).
	Console http.Handler
	// Version is deskd's version: in the runtime file, exports and audit
	// bundles.
	Version string
}

// Frontend is the HTTP API of a running daemon (StartFrontend).
type Frontend struct {
	api           *Server
	srv           *Serving
	ring          *EventRing
	removeRuntime func() error
	log           zerolog.Logger
}

var _ desk.Frontend = (*Frontend)(nil)

// StartFrontend reads the tokens of o.Config's token files, serves the API
// of o.Desks on the config's listeners, writes the runtime file in its
// state_dir (a failure is logged: the CLI then finds deskd by listen or
// --addr), and logs "deskd ready" with the addresses served. An
// unreadable token file, or a listener that cannot be opened, is an
// error and nothing is served.
func StartFrontend(ctx context.Context, o FrontendOptions) (*Frontend, error) {
	cfg, log := o.Config, o.Log
	// The operator's, the feeds' and the scraper's tokens (auth.go).
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
	a := New(Options{Desks: o.Desks, Token: token, FeedToken: feedToken, MetricsToken: metricsToken, Clock: o.Clock, Events: o.Events, Log: log,
		Check: o.Check, NATS: NATSStatusOf(o.NATS), Notify: o.Notify, Approvals: o.Approvals, Console: o.Console, Listen: cfg.Listens,
		AllowedHosts: o.AllowedHosts, Host: host, Files: Files{Day: cfg.Day, Version: o.Version,
			AuditConfig: func(name string) (audit.Config, error) { return audit.ConfigOf(cfg, name) }}})
	for pattern, h := range o.Handlers {
		a.Handle(pattern, h)
	}
	ls, err := Listen(cfg.Listens)
	if err != nil {
		return nil, err
	}
	srv := Serve(ctx, a, ls)
	f := &Frontend{api: a, srv: srv, ring: o.Events, log: log}
	rt := Runtime{PID: os.Getpid(), Listen: srv.Addrs(), Config: cfg.Path, StartedAt: o.Clock.Now(), Version: o.Version}
	if f.removeRuntime, err = WriteRuntime(cfg.StateDir, rt); err != nil {
		log.Warn().Err(err).Msg("the CLI will not find this deskd by its runtime file, only by listen or --addr")
	}
	log.Info().Strs("listen", srv.Addrs()).Strs("desks", o.Desks.Names()).Bool("auth", token != "").Bool("feed_token", feedToken != "").
		Bool("metrics_token", metricsToken != "").
		Str("inbox", desk.InboxDir(cfg.StateDir)).Str("runtime", RuntimePath(cfg.StateDir)).
		Strs("schedules_ahead", desk.AheadNames(o.Desks, o.Clock.Now())).Msg("deskd ready")
	return f, nil
}

// Refuse begins the shutdown: the API answers 503 to mutations and to
// GET /healthz.
func (f *Frontend) Refuse() { f.api.Refuse() }

// Addrs are the addresses the API serves on (a cluster's other hosts
// send a desk's clients to the first TCP one).
func (f *Frontend) Addrs() []string { return f.srv.Addrs() }

// Errs delivers an error if the API stops serving on its own.
func (f *Frontend) Errs() <-chan error { return f.srv.Errs() }

// Stop closes the API: in-flight requests get timeout; event streams end,
// the event ring is closed and the runtime file removed.
func (f *Frontend) Stop(timeout time.Duration) error {
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
