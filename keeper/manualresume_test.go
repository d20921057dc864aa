package keeper_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/router"
)

// TestManualRolloverCutShortIsDueAfterARestart: a manual rollover of
// today's session, cut short after its summary (a crash, or a host that
// lost the desk's lease), is due again once the desk starts over the same
// folder, though the session is of today: the next turn completes it from
// its first missing step (the summary is not asked for again), announced
// as the manual rollover it was, and goes into the new session with the
// summary in front. Before, only a session of an earlier date was due,
// and the cut-short rollover waited for the next trading day, its summary
// missing the rest of the day's turns.
func TestManualRolloverCutShortIsDueAfterARestart(t *testing.T) {
	errCrash := errors.New("crash (injected)")
	e := newEnv(t, desktest.At("2026-03-01T04:30:00Z"), 0) // 10:00 IST, 1 March
	started := eventtest.Watch[event.SessionStarted](t, e.bus)
	p1 := e.start(keeper.Options{AfterStep: func(s keeper.Step) error {
		if s == keeper.StepSummarised {
			return errCrash
		}
		return nil
	}})
	p1.turn(t, "t1", "hello")
	old := p1.router.SessionID()
	if _, err := p1.keeper.RollOver(t.Context(), event.ReasonManualRollover); !errors.Is(err, errCrash) {
		t.Fatalf("the manual rollover with a crash after its summary: %v, want the crash", err)
	}
	if err := p1.router.Close(); err != nil {
		t.Fatal(err)
	}

	p2 := e.start(keeper.Options{})
	if !p2.keeper.Due() {
		t.Fatal("after the restart, the manual rollover cut short is not due")
	}
	first := p2.turn(t, "t2", "next")
	if cur := p2.router.SessionID(); cur == old {
		t.Fatalf("the turn after the restart went into the old session %s", old)
	}
	if !strings.HasPrefix(first, "[This is the first message of a new session.") {
		t.Errorf("the first message after the resumed rollover = %q, want the summary in front", first)
	}
	if n := e.model.count(router.TaskSummary); n != 1 {
		t.Errorf("%d summary calls, want 1: the journalled summary is used", n)
	}
	if p2.keeper.Due() {
		t.Error("Due() after the resumed rollover")
	}
	e.bus.Close() // delivers every event published
	var manual []event.SessionStarted
	for _, ev := range eventtest.Rest[event.SessionStarted](started) {
		if ev.Reason.Rollover() {
			manual = append(manual, ev)
		}
	}
	if len(manual) != 1 || manual[0].Reason != event.ReasonManualRollover || manual[0].Previous != old || manual[0].Session != p2.router.SessionID() {
		t.Errorf("the rollovers announced: %+v, want one manual_rollover from %s to %s", manual, old, p2.router.SessionID())
	}
}
