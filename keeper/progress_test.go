package keeper_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/router"
)

// progressOf waits for the next progress report on reports.
func progressOf(t *testing.T, reports <-chan keeper.Progress) keeper.Progress {
	t.Helper()
	select {
	case p := <-reports:
		return p
	case <-time.After(eventtest.Timeout):
		t.Fatalf("no progress report within %v", eventtest.Timeout)
		return keeper.Progress{}
	}
}

// describe is a report as the test writes it: "summarising running 10s".
func describe(p keeper.Progress) string {
	return fmt.Sprintf("%s %s %s", p.Phase, p.State, p.At.Sub(p.Since))
}

// TestRollOverReportsItsSteps: a rollover reports each step's start and
// end, and every StillEvery of a step that runs long, on deskd's clock;
// each report is announced as rollover.progress too.
func TestRollOverReportsItsSteps(t *testing.T) {
	start := desktest.At("2026-03-01T04:30:00Z") // 10:00 IST, 1 March
	e := newEnv(t, start, 0)
	progress := eventtest.Watch[event.RolloverProgress](t, e.bus)
	reports := make(chan keeper.Progress, 100)
	p := e.start(keeper.Options{Progress: func(p keeper.Progress) { reports <- p }, StillEvery: 10 * time.Second,
		SummaryAttempts: 2, Backoff: 25 * time.Second})
	p.turn(t, "t1", "Should we buy NIFTY?")
	old := p.router.SessionID()
	e.model.setFail(router.TaskSummary, true)
	boundary := desktest.At("2026-03-01T18:30:00Z") // 00:00 IST, 2 March
	e.clock.Set(boundary)

	ctx, cancel := context.WithTimeout(t.Context(), eventtest.Timeout)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	done := make(chan error, 1)
	wg.Go(func() {
		_, err := p.keeper.RollOver(ctx, event.ReasonDailyRollover)
		done <- err
	})
	first := progressOf(t, reports)
	if first.Phase != keeper.PhaseSummarising || first.State != event.ProgressStarted || first.Session != old ||
		first.Date != "2026-03-01" || !first.Since.Equal(boundary) {
		t.Fatalf("first report = %+v, want summarising started for %s of 2026-03-01 at %s", first, old, boundary)
	}
	// The first attempt fails at once; its backoff is armed from the
	// boundary before the clock moves (else, on a loaded machine, it
	// could be armed from a later reading).
	if err := e.clock.WaitTimerAt(ctx, boundary.Add(25*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{10 * time.Second, 20 * time.Second} {
		if err := e.clock.WaitTimerAt(ctx, boundary.Add(at)); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(boundary.Add(at))
		if got, want := describe(progressOf(t, reports)), "summarising running "+at.String(); got != want {
			t.Errorf("report at %s = %s, want %s", at, got, want)
		}
	}
	if err := e.clock.WaitTimerAt(ctx, boundary.Add(25*time.Second)); err != nil { // the backoff
		t.Fatal(err)
	}
	e.clock.Set(boundary.Add(25 * time.Second))
	var got []string
	for range 5 {
		got = append(got, describe(progressOf(t, reports)))
	}
	want := []string{"summarising done 25s", "folding started 0s", "folding done 0s", "curating started 0s", "curating done 0s"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("reports after the summary:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := <-done; err != nil {
		t.Fatalf("RollOver: %v", err)
	}
	ev := eventtest.Next[event.RolloverProgress](progress)
	if ev.Desk != "main" || ev.Phase != "summarising" || ev.State != event.ProgressStarted || ev.Session != old || !ev.Since.Equal(boundary) {
		t.Errorf("first rollover.progress = %+v", ev)
	}
	if ev = eventtest.Next[event.RolloverProgress](progress); ev.State != event.ProgressRunning || ev.ElapsedMS != 10000 {
		t.Errorf("second rollover.progress = %+v, want running for 10000 ms", ev)
	}
}
