package main

// deskd run: the daemon's command and its wiring (the logger, the bus and
// its log, the metrics, the daemon, the front end: httpapi.StartFrontend).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/console"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/metrics"
	"github.com/deskd/deskd/desk/natsconn"
	"github.com/deskd/deskd/desk/natsevents"
	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/systemd"
)

// signalSource relays the signals the daemon handles (SIGHUP, SIGTERM,
// SIGINT) to a channel, from the call on, until stop is called. main
// passes one (daemonSignals); in-process runs have none, and end through
// their context alone.
type signalSource func() (sigs <-chan os.Signal, stop func())

func newRunCommand(stderr io.Writer, signals signalSource) *cobra.Command {
	var path, clockStart, stateDir string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon: every desk of the config, until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			clk := clock.Real()
			if clockStart != "" {
				start, err := clock.ParseStart(clockStart, time.Now())
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				clk = clock.StartingAt(start)
			}
			loaded, err := config.LoadKeeping(path, nil)
			if err != nil {
				return configError(err)
			}
			if stateDir != "" {
				if loaded.Config.StateDir, err = filepath.Abs(stateDir); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--state-dir %s: %w", stateDir, err)}
				}
				loaded.Config.StateDirOverridden = true
			}
			return runLoaded(cmd.Context(), loaded, clk, stderr, signals)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().StringVar(&clockStart, "clock-start", "", "start deskd's clock at this RFC3339 instant and run it at real speed (rehearsals, tests)")
	cmd.Flags().StringVar(&stateDir, "state-dir", os.Getenv("DESKD_STATE_DIR"), "use this state folder instead of the config's state_dir (a rehearsal's fresh folder; the other commands find it through $DESKD_STATE_DIR, the default)")
	return cmd
}

// runDaemon wires the daemon of cfg and runs it (desk.Daemon.Run) until
// ctx is done or the signals stop it: the logger, the bus and its log,
// the metrics, systemd's notifier, the debug listener (debug_listen), and
// the HTTP API as the front end.
func runDaemon(ctx context.Context, cfg *config.Config, clk clock.Clock, stderr io.Writer, signals signalSource) error {
	return runLoaded(ctx, config.Loaded{Config: cfg}, clk, stderr, signals)
}

// runLoaded is runDaemon on a config whose refused desk files are in loaded.Rejected.
func runLoaded(ctx context.Context, loaded config.Loaded, clk clock.Clock, stderr io.Writer, signals signalSource) error {
	cfg := loaded.Config
	log, level, err := desk.NewLogger(cfg.Log, cfg.Location, stderr, clk)
	if err != nil {
		return err
	}
	bus := event.New()
	// Closed by the daemon's shutdown, which may give up on stuck handlers; here only if it never ran.
	ran := false
	defer func() {
		if !ran {
			bus.Close()
		}
	}()
	stopLog := desk.LogEvents(bus, log, cfg.Location, level)
	defer stopLog()
	met := metrics.New(bus)
	defer met.Close()
	ring := httpapi.NewEventRing(bus, clk.Now(), httpapi.RingSize) // before the desks: it holds their start
	defer ring.Close()
	defer httpapi.StartDebug(cfg.DebugListen, log)() // before the desks: a slow start can be profiled

	nc, err := natsconn.Connect(cfg.NATS, log, clk) // nil without a nats section
	if err != nil {
		return err
	}
	defer nc.Close()
	if nc != nil {
		met.SetNATS(nc.Connected)
	}
	if nc != nil && cfg.NATS.Events != nil { // every event out to JetStream, through a durable outbox
		ev := cfg.NATS.Events
		pub, err := natsevents.New(natsevents.Options{Conn: nc.NATS(), Stream: ev.Stream, Subject: ev.Subject,
			Dir: filepath.Join(cfg.StateDir, "nats", "events"), MaxBytes: ev.OutboxMaxBytes, Bus: bus, Clock: clk, Log: log})
		if err != nil {
			return err
		}
		pub.Start()
		defer pub.Close() // after the daemon's shutdown has drained the bus, before nc.Close
		met.SetNATSEvents(pub)
	}
	var made atomic.Pointer[desk.Daemon]                  // the daemon, once made: the notifier reads its desks' answers and ledgers
	nt, err := startNotify(cfg, bus, clk, log, made.Load) // nil without a notify section
	if err != nil {
		return err
	}
	if nt != nil {
		defer nt.Close() // after the daemon's shutdown has drained the bus
		met.SetNotify(nt)
	}
	watchdog, err := systemd.WatchdogInterval()
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
	var d *desk.Daemon  // its API decides on the calls that wait for an operator
	var conn *nats.Conn // a cluster's leases, WALs and snapshots are on its JetStream
	if nc != nil {
		conn = nc.NATS()
	}
	d, err = desk.NewDaemon(desk.DaemonOptions{NATS: conn,
		Config: cfg, Rejected: loaded.Rejected, Clock: clk, Bus: bus, Log: log, Level: level, Notify: systemd.NewNotifier(clk), Watchdog: watchdog,
		Serve: func(ctx context.Context, set *desk.Set, check func() desk.ConfigCheck) (desk.Frontend, error) {
			front, err := httpapi.StartFrontend(ctx, httpapi.FrontendOptions{Config: cfg, Clock: clk, Events: ring, Log: log, Desks: set, Check: check,
				Handlers: map[string]http.Handler{"GET /metrics": met.Handler()}, NATS: nc, Approvals: d.Approvals(),
				AllowedHosts: func() []string { return d.Config().AllowedHosts }, // allowed_hosts as a reload leaves it
				Notify:       httpapi.NotifyStatuses(nt), Console: console.Handler(), Version: buildinfo.Version()})
			if err != nil {
				return nil, err
			}
			if nc == nil || cfg.NATS.Triggers == nil {
				return front, nil // the NATS ingress starts once the desks are up; Guard's Refuse stops it before they stop
			}
			o := natsfeed.Options{Conn: nc.NATS(), Triggers: *cfg.NATS.Triggers, Desks: set, Bus: bus, Clock: clk, Log: log}
			if cfg.Cluster != nil { // a consumer per desk, bound by the desk's owner only
				o.Lease = cfg.Cluster.Lease
			}
			feed := natsfeed.Start(o)
			d.SetIngress(feed)
			return feed.Guard(front), nil
		},
		ReleaseSignals: release,
	})
	if err != nil {
		return err
	}
	made.Store(d)
	met.SetGauges(metrics.DeskGauges(d.Set()))
	met.SetRejections(d.Set().ConfigRejections)
	met.SetMCP(d.MCPServersUp)
	met.SetDurable(d)
	if err := met.SetFreeSpace(d.FreeSpace); err != nil {
		return err
	}
	ran = true
	return d.Run(ctx, sigs)
}
