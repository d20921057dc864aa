package main

// The in-process harness: deskd run's daemon (runDaemon, the same wiring
// as the binary's) run in the test process on a fake clock, with a signal
// channel for the process's signals. Tests drive it as they drive the
// binary (deskdProc: its JSON log lines, signals, exit code) and move its
// clock themselves; only what needs a real process (SIGKILL, the real
// signals, sd_notify's environment, the version, a second process on the
// lock) runs the binary.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
)

// inProcess is the part of a deskdProc that runs in this process.
type inProcess struct {
	clk    *clock.Fake
	sigs   chan os.Signal
	cancel context.CancelFunc
	code   int   // the exit code deskd run would have; set before exited closes
	err    error // what runDaemon returned
}

// startInProcess runs the daemon of the main config file path in this
// process, its clock a fake one reading start. When the test ends, the
// daemon gets SIGTERM (if it still runs) and the test waits for it.
func startInProcess(t *testing.T, name, path string, start time.Time) *deskdProc {
	t.Helper()
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatalf("%s: load %s: %v", name, path, err)
	}
	return runInProcess(t, name, cfg, start)
}

// runInProcess is startInProcess on a loaded config.
func runInProcess(t *testing.T, name string, cfg *config.Config, start time.Time) *deskdProc {
	t.Helper()
	return runInProcessWith(t, name, cfg, start, nil)
}

// runInProcessWith is runInProcess with the daemon's stderr wrapped by
// wrap (nil: none), which gets the writer the test reads the lines from.
func runInProcessWith(t *testing.T, name string, cfg *config.Config, start time.Time, wrap func(io.Writer) io.Writer) *deskdProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ip := &inProcess{clk: clock.NewFake(start), sigs: make(chan os.Signal, 8), cancel: cancel}
	d := &deskdProc{name: name, stderr: newLineRecorder(), stdout: newLineRecorder(), exited: make(chan struct{}), in: ip}
	go func() {
		defer close(d.exited)
		var stderr io.Writer = d.stderr
		if wrap != nil {
			stderr = wrap(d.stderr)
		}
		ip.err = runDaemon(ctx, cfg, ip.clk, stderr, func() (<-chan os.Signal, func()) { return ip.sigs, func() {} })
		if ip.err != nil {
			ip.code = 1
			var e *exitError
			if errors.As(ip.err, &e) {
				ip.code = e.code
			}
			fmt.Fprintf(d.stderr, "deskd: %s\n", ip.err) // as run prints it
		}
		d.stderr.flush()
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			ip.sigs <- syscall.SIGTERM
			select {
			case <-d.exited:
			case <-time.After(30 * time.Second):
				cancel()
				t.Errorf("%s: did not stop within 30s of SIGTERM at the end of the test", name)
				<-d.exited
			}
		}
		cancel()
		if t.Failed() && !d.dumped {
			t.Logf("%s stderr, the end:\n%s", d.name, d.stderr.tail(dumpLines))
		}
	})
	return d
}

// Clock returns the fake clock of an in-process daemon.
func (d *deskdProc) Clock() *clock.Fake { return d.in.clk }

// at moves an in-process daemon's clock to the instant s (RFC3339), once
// the daemon has armed a timer for exactly that instant (a schedule's
// slot, the day boundary, a debounce): the daemon then sees the time come.
func (d *deskdProc) at(t *testing.T, s string) {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	d.advanceTo(t, at)
}

// advanceTo is at for a time.Time.
func (d *deskdProc) advanceTo(t *testing.T, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := d.in.clk.WaitTimerAt(ctx, at); err != nil {
		d.fail(t, "move the clock to %s: %v", at.Format(time.RFC3339), err)
	}
	d.in.clk.Set(at)
}

// debounced runs wait (which waits for the lines of a reload) after a
// config edit, moving an in-process daemon's clock past each debounce
// timer the config watcher arms meanwhile. One edit may arm several: os.WriteFile's truncation and its write are
// two fsnotify events, and one that comes after the clock has moved
// restarts the debounce (the watcher drops the expiry it has not read
// yet) on a clock that stands still, so that the reload would never come.
func (d *deskdProc) debounced(t *testing.T, wait func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			at := d.in.clk.Now().Add(config.DefaultDebounce)
			if d.in.clk.WaitTimerAt(ctx, at) != nil {
				return
			}
			d.in.clk.Set(at)
		}
	}()
	defer func() { cancel(); <-done }()
	wait()
}
