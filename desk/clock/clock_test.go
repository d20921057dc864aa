package clock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

func TestStartingAtReadsTheStartAndRuns(t *testing.T) {
	start := time.Date(2026, 3, 1, 18, 29, 0, 0, time.UTC)
	c := clock.StartingAt(start)
	now := c.Now()
	if now.Before(start) || now.Sub(start) > time.Minute {
		t.Fatalf("Now() = %v, want just after %v", now, start)
	}
	if now.Location() != time.UTC {
		t.Errorf("Now() is in %v, want UTC whatever the host's zone", now.Location())
	}
	if later := c.Now(); later.Before(now) {
		t.Errorf("the clock went back: %v then %v", now, later)
	}
}

func TestFakeFiresDueTimersInOrder(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	a, b, stopped := f.NewTimer(time.Second), f.NewTimer(time.Minute), f.NewTimer(2*time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports pending only the first time")
	}
	if f.Pending() != 2 {
		t.Fatalf("Pending() = %d, want 2", f.Pending())
	}
	f.Advance(time.Second - time.Nanosecond)
	select {
	case <-a.C():
		t.Fatal("a timer fired before its deadline")
	default:
	}
	f.Advance(time.Nanosecond)
	if got := <-a.C(); !got.Equal(start.Add(time.Second)) {
		t.Errorf("a fired at %v", got)
	}
	select {
	case <-b.C():
		t.Fatal("the minute timer fired after a second")
	case <-stopped.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	f.Set(start) // never backwards
	if !f.Now().Equal(start.Add(time.Second)) {
		t.Errorf("Set moved the clock back to %v", f.Now())
	}
	if now := <-f.NewTimer(0).C(); !now.Equal(f.Now()) {
		t.Errorf("a zero timer fired at %v", now)
	}
}

func TestWaitPendingAndSleep(t *testing.T) {
	f := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), f, time.Hour) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.WaitPending(ctx, 1); err != nil {
		t.Fatalf("the sleeper never armed its timer: %v", err)
	}
	f.Advance(time.Hour)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := clock.Sleep(cctx, f, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context = %v", err)
	}
	if f.Pending() != 0 {
		t.Errorf("a cancelled Sleep left %d timers", f.Pending())
	}
}

func TestFakeWaitTimerAt(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	_ = f.NewTimer(time.Second) // another deadline does not count
	armed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		armed <- f.WaitTimerAt(ctx, start.Add(time.Minute))
	}()
	select {
	case err := <-armed:
		t.Fatalf("WaitTimerAt returned before a timer of its deadline was armed: %v", err)
	default:
	}
	_ = f.NewTimer(time.Minute)
	if err := <-armed; err != nil {
		t.Fatalf("WaitTimerAt: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.WaitTimerAt(ctx, start.Add(time.Hour)); err == nil {
		t.Error("WaitTimerAt of a deadline no timer has returned nil on a done context")
	}
}

func TestParseStart(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	got, err := clock.ParseStart("2026-03-01T23:59:00+05:30", now)
	if err != nil || !got.Equal(time.Date(2026, 3, 1, 18, 29, 0, 0, time.UTC)) {
		t.Errorf("ParseStart = %v, %v; want 2026-03-01 18:29 UTC", got, err)
	}
	for _, bad := range []string{"yesterday", "0001-01-01T00:00:00Z", "2300-01-01T00:00:00Z"} {
		if _, err := clock.ParseStart(bad, now); err == nil || !strings.Contains(err.Error(), "--clock-start") {
			t.Errorf("ParseStart(%q) = %v, want an error naming --clock-start", bad, err)
		}
	}
}
