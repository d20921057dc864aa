// Package systemd speaks to systemd for deskd (systemd/deskd.service is
// Type=notify): readiness, reloads, stopping, status lines and watchdog
// pings over the sd_notify protocol. The folder also holds the unit.
package systemd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/deskd/deskd/desk/clock"
)

// Notifier tells systemd what deskd is doing, over the sd_notify protocol
// (systemd/deskd.service is Type=notify). Without NOTIFY_SOCKET, when deskd
// is not run by systemd, every call does nothing and returns nil.
//
// The messages: READY=1 once every desk has started, RELOADING=1 (with
// MONOTONIC_USEC) and READY=1 again around each reload (also when the new
// config was refused: deskd is up, on the old one), STOPPING=1 when
// shutdown begins, STATUS= lines all along, and WATCHDOG=1 from Watchdog
// while the main loop is alive.
type Notifier struct {
	clk clock.Clock

	mu     sync.Mutex
	status string // the last STATUS= sent by Ready, Reloading, Stopping or Status
}

// NewNotifier returns a notifier whose watchdog ticks on clk.
func NewNotifier(clk clock.Clock) *Notifier { return &Notifier{clk: clk} }

// Ready sends READY=1 with a STATUS= line.
func (n *Notifier) Ready(status string) error {
	return n.send(daemon.SdNotifyReady, status)
}

// Reloading sends RELOADING=1 with the monotonic time systemd (253 and
// later, Type=notify-reload) pairs it with, and a STATUS= line. Send Ready
// when the reload is over, whether or not the new config was taken.
func (n *Notifier) Reloading(status string) error {
	state := daemon.SdNotifyReloading
	if usec := strings.TrimSuffix(daemon.SdNotifyMonotonicUsec(), "\n"); usec != "" {
		state += "\n" + usec
	}
	return n.send(state, status)
}

// Stopping sends STOPPING=1 with a STATUS= line.
func (n *Notifier) Stopping(status string) error {
	return n.send(daemon.SdNotifyStopping, status)
}

// Status sends a STATUS= line alone: what deskd is doing, shown by
// systemctl status.
func (n *Notifier) Status(status string) error { return n.send("", status) }

// send sends state (which may be empty) and, if status is not empty, a
// STATUS= line, in one datagram.
func (n *Notifier) send(state, status string) error {
	lines := make([]string, 0, 2)
	if state != "" {
		lines = append(lines, state)
	}
	if status != "" {
		status = oneLine(status)
		n.mu.Lock()
		n.status = status
		n.mu.Unlock()
		lines = append(lines, "STATUS="+status)
	}
	return notify(strings.Join(lines, "\n"))
}

// notify sends one datagram to NOTIFY_SOCKET, if it is set.
func notify(state string) error {
	if _, err := daemon.SdNotify(false, state); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// oneLine makes s fit on a STATUS= line: one line, at most 200 runes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ; ")), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// WatchdogInterval is WatchdogSec as systemd passed it (WATCHDOG_USEC, for
// this process's WATCHDOG_PID), or 0 when the watchdog is off.
func WatchdogInterval() (time.Duration, error) {
	iv, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0, fmt.Errorf("watchdog: %w", err)
	}
	return iv, nil
}

// Watchdog sends WATCHDOG=1 every half of the watchdog interval, on the
// notifier's clock, for as long as healthy reports that the main loop is
// alive, until ctx is done. A stuck main loop therefore stops the pings,
// and systemd restarts deskd when WatchdogSec passes; meanwhile STATUS=
// says so, and the last status comes back if the loop recovers. Without a
// watchdog (no WATCHDOG_USEC, or it is for another process) Watchdog
// returns nil at once.
func (n *Notifier) Watchdog(ctx context.Context, healthy func() bool) error {
	iv, err := WatchdogInterval()
	if err != nil || iv <= 0 {
		return err
	}
	stuck := false
	for {
		if err := clock.Sleep(ctx, n.clk, iv/2); err != nil {
			return nil
		}
		if healthy() {
			if stuck {
				stuck = false
				n.mu.Lock()
				status := n.status
				n.mu.Unlock()
				if status != "" {
					_ = notify("STATUS=" + status)
				}
			}
			_ = notify(daemon.SdNotifyWatchdog) // a lost ping is retried at the next tick
			continue
		}
		if !stuck {
			stuck = true
			_ = notify("STATUS=" + oneLine(fmt.Sprintf("main loop not responding; watchdog pings stopped (WatchdogSec=%v)", iv)))
		}
	}
}
