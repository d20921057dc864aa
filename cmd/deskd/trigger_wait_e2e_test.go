package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestTriggerWaitOneExchangeE2E: deskd trigger --wait of a turn that ends
// within the wait is one exchange: one POST ?wait= answered with the
// outcome (deskd's trace log shows it and no GET of the trigger, the desk
// or the event stream), and the reply is printed.
func TestTriggerWaitOneExchangeE2E(t *testing.T) {
	s := newE2ESetup(t, "")
	replaceInFile(t, s.Config, "level: info", "level: trace")
	d := startInProcess(t, "deskd", s.Config, time.Date(2026, 3, 2, 4, 0, 30, 0, time.UTC))
	addr := d.waitReady(t)
	code, out := deskdCLI(t, "trigger", "main", "NIFTY crossed 22000", "--id", "w-cli", "--wait", "--timeout", "1m", "--addr", addr)
	if code != 0 || !strings.Contains(out, "w-cli: answered") || !strings.Contains(out, "[scripted]") {
		t.Fatalf("deskd trigger --wait = %d\n%s", code, out)
	}
	d.waitFor(t, time.Now().Add(30*time.Second), "the POST's trace line", func(l stderrLine) bool {
		return l.Str("message") == "http request" && l.Str("method") == "POST" && l.Str("path") == "/v1/desks/main/triggers"
	})
	if code, body := d.call(t, "GET", "/healthz", "", ""); code != 200 {
		t.Fatalf("GET /healthz = %d %s", code, body)
	}
	d.waitFor(t, time.Now().Add(30*time.Second), "the healthz trace line", func(l stderrLine) bool {
		return l.Str("message") == "http request" && l.Str("path") == "/healthz"
	})
	d.terminate(t)
	if n := d.count(logMessage("http request")); n != 2 {
		lines, _ := d.stderr.snapshot()
		var reqs []string
		for _, l := range lines {
			if l.Str("message") == "http request" {
				reqs = append(reqs, l.Str("method")+" "+l.Str("path"))
			}
		}
		t.Errorf("deskd served %d requests (%s), want 2: the CLI's one POST and the test's GET /healthz", n, strings.Join(reqs, ", "))
	}
	if n := d.count(logMessage("event stream client connected")); n != 0 {
		t.Errorf("the CLI opened the event stream %d times, want none", n)
	}
}

// TestTriggerWaitFallsBackToWatch: a turn that has not ended when the
// POST's 30s wait passes on deskd's clock is answered 202, and deskd
// trigger --wait watches it from there (its progress on stderr) until it
// is answered, within --timeout.
func TestTriggerWaitFallsBackToWatch(t *testing.T) {
	g := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: g})
	var out syncBuffer
	errb := newLineRecorder()
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"trigger", "main", "slow one", "--id", "w-slow", "--wait", "--timeout", "10m", "--addr", h.URL()}, &out, errb)
	}()
	g.Expect(t, "slow one")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.Clock.WaitTimerAt(ctx, h.Clock.Now().Add(firstWait)); err != nil {
		t.Fatalf("the POST's wait of %s is not armed on deskd's clock: %v", firstWait, err)
	}
	if lines, _ := errb.snapshot(); len(lines) > 0 {
		t.Errorf("stderr before the POST's wait passed: %s, want nothing (one exchange so far)", errb.String())
	}
	h.Clock.Advance(firstWait)
	for progressed := false; !progressed; {
		lines, changed := errb.snapshot()
		for _, l := range lines {
			progressed = progressed || strings.HasPrefix(l.Raw, "w-slow: running")
		}
		if progressed {
			break
		}
		select {
		case <-changed:
		case code := <-done:
			t.Fatalf("deskd trigger --wait ended (%d) before the turn did:\n%s%s", code, out.String(), errb.String())
		case <-ctx.Done():
			t.Fatalf("no progress line on stderr within 10s of the 202:\n%s", errb.String())
		}
	}
	g.Release <- struct{}{}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out.String(), "w-slow: answered") {
			t.Errorf("deskd trigger --wait = %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("deskd trigger --wait did not end within 30s of the answer:\n%s", errb.String())
	}
}
