package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/systemd"
)

// notifySocket is a NOTIFY_SOCKET (listenSdNotify) set in this process's
// environment, as systemd sets it, for the notifiers the tests make.
func notifySocket(t *testing.T) *sdNotifyListener {
	t.Helper()
	n := listenSdNotify(t)
	t.Setenv("NOTIFY_SOCKET", n.path)
	return n
}

func TestNotifyOrder(t *testing.T) {
	sd := notifySocket(t)
	n := systemd.NewNotifier(clock.NewFake(time.Unix(0, 0)))

	steps := []struct {
		name string
		call func() error
		want []string // the datagram's lines; "MONOTONIC_USEC=" matches any value
	}{
		{"ready", func() error { return n.Ready("running 2 desks: fx, rates") },
			[]string{"READY=1", "STATUS=running 2 desks: fx, rates"}},
		{"reloading", func() error { return n.Reloading("reloading config") },
			[]string{"RELOADING=1", "MONOTONIC_USEC=", "STATUS=reloading config"}},
		{"ready again", func() error { return n.Ready("config rejected: fx.yaml: model: unknown\nrates.yaml: bad") },
			[]string{"READY=1", "STATUS=config rejected: fx.yaml: model: unknown ; rates.yaml: bad"}},
		{"status", func() error { return n.Status("draining 1 running turn") },
			[]string{"STATUS=draining 1 running turn"}},
		{"stopping", func() error { return n.Stopping("stopping: no new turns") },
			[]string{"STOPPING=1", "STATUS=stopping: no new turns"}},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := strings.Split(sd.next(t), "\n")
		if len(got) != len(s.want) {
			t.Fatalf("%s: datagram %q, want lines %q", s.name, got, s.want)
		}
		for i, w := range s.want {
			if w == "MONOTONIC_USEC=" {
				v, ok := strings.CutPrefix(got[i], w)
				if usec, err := strconv.ParseInt(v, 10, 64); !ok || err != nil || usec <= 0 {
					t.Errorf("%s: line %d = %q, want MONOTONIC_USEC=<microseconds>", s.name, i, got[i])
				}
				continue
			}
			if got[i] != w {
				t.Errorf("%s: line %d = %q, want %q", s.name, i, got[i], w)
			}
		}
	}
}

func TestNotifyWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := systemd.NewNotifier(clock.NewFake(time.Unix(0, 0)))
	for name, err := range map[string]error{
		"Ready": n.Ready("x"), "Reloading": n.Reloading("x"), "Stopping": n.Stopping("x"), "Status": n.Status("x"),
	} {
		if err != nil {
			t.Errorf("%s without NOTIFY_SOCKET = %v, want nil", name, err)
		}
	}
	t.Setenv("WATCHDOG_USEC", "")
	if err := n.Watchdog(t.Context(), func() bool { return true }); err != nil {
		t.Errorf("Watchdog without WATCHDOG_USEC = %v, want nil", err)
	}
}

func TestNotifyBrokenSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "nobody-listens"))
	n := systemd.NewNotifier(clock.NewFake(time.Unix(0, 0)))
	if err := n.Ready("x"); err == nil {
		t.Error("Ready with nobody on NOTIFY_SOCKET: no error")
	}
}

func TestNotifyWatchdog(t *testing.T) {
	sd := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "20000000") // WatchdogSec=20s: ping every 10s
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	n := systemd.NewNotifier(clk)
	if err := n.Ready("running 1 desk"); err != nil {
		t.Fatal(err)
	}
	if got := sd.next(t); got != "READY=1\nSTATUS=running 1 desk" {
		t.Fatalf("first datagram %q", got)
	}

	var healthy atomic.Bool
	healthy.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Watchdog(ctx, healthy.Load) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watchdog = %v, want nil", err)
		}
	}()

	// tick waits for the pinger's timer, then moves the clock to it.
	tick := func(d time.Duration) {
		t.Helper()
		wctx, stop := context.WithTimeout(t.Context(), 10*time.Second)
		defer stop()
		if err := clk.WaitPending(wctx, 1); err != nil {
			t.Fatal("the watchdog pinger never armed its timer")
		}
		clk.Advance(d)
	}

	tick(9 * time.Second) // not yet half the interval
	tick(time.Second)
	if got := sd.next(t); got != "WATCHDOG=1" {
		t.Fatalf("after 10s: %q, want WATCHDOG=1", got)
	}
	tick(10 * time.Second)
	if got := sd.next(t); got != "WATCHDOG=1" {
		t.Fatalf("after 20s: %q, want WATCHDOG=1", got)
	}

	// The main loop is stuck: no more pings, one STATUS= that says so.
	healthy.Store(false)
	tick(10 * time.Second)
	tick(10 * time.Second)
	tick(10 * time.Second)
	// Back to health: the last status returns, then the pings.
	healthy.Store(true)
	tick(10 * time.Second)
	want := []string{
		"STATUS=main loop not responding; watchdog pings stopped (WatchdogSec=20s)",
		"STATUS=running 1 desk",
		"WATCHDOG=1",
	}
	for i, w := range want {
		if got := sd.next(t); got != w {
			t.Fatalf("datagram %d after the stall: %q, want %q", i, got, w)
		}
	}
}

func TestWatchdogOtherPID(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "20000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	if iv, err := systemd.WatchdogInterval(); iv != 0 || err != nil {
		t.Errorf("WatchdogInterval for another pid = %v, %v; want 0, nil", iv, err)
	}
	t.Setenv("WATCHDOG_USEC", "soon")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n := systemd.NewNotifier(clock.NewFake(time.Unix(0, 0)))
	if err := n.Watchdog(t.Context(), func() bool { return true }); err == nil {
		t.Error("Watchdog with WATCHDOG_USEC=soon: no error")
	}
}
