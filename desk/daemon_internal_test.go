package desk

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/triggers"
)

// TestSpoolKeepsFilesTheDeskCannotRecord: a spool file whose trigger the
// desk could not record (its disk refused the write, or it is restarting)
// stays in the inbox for the next look, as a full queue does; any other
// refusal rejects it.
func TestSpoolKeepsFilesTheDeskCannotRecord(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		keep bool
	}{
		{"disk refused the write", fmt.Errorf("desk main: queue trigger x: %w: %w", ErrStorage, syscall.ENOSPC), true},
		{"desk restarting", fmt.Errorf("desk main: %w", ErrStopped), true},
		{"bad trigger", errors.New("text is empty"), false},
	} {
		got := spoolSubmitError("main", tt.err)
		if keep := errors.Is(got, triggers.ErrQueueFull); keep != tt.keep {
			t.Errorf("%s: spoolSubmitError = %v; keeps the file %v, want %v", tt.name, got, keep, tt.keep)
		}
	}
}

// TestSpoolKeepsFilesOfADeskThatDoesNotRunHere: an inbox file of a desk
// of a cluster this host stands by for, is starting or failed to start
// (its lease lost while the spool still served it) stays in the inbox for
// a later look; one of a desk the config no longer has is rejected.
func TestSpoolKeepsFilesOfADeskThatDoesNotRunHere(t *testing.T) {
	set := NewSet()
	sp := &spool{set: set}
	req := triggers.Request{Text: "from the inbox", ID: "in-1"}
	for _, c := range []struct {
		move  func()
		state State
	}{
		{func() { set.Standby("main", &Owner{Host: "b", Epoch: 2}) }, StateStandby},
		{func() { set.Own("main", Owner{Host: "a", Epoch: 3}) }, StateStarting},
		{func() { set.Fail("main", Failure{Reason: "a test's failure"}) }, StateFailed},
	} {
		c.move()
		if err := sp.submit("main", "in-1.json", req); !errors.Is(err, triggers.ErrQueueFull) {
			t.Errorf("an inbox file of a desk in state %s: %v, want it kept (ErrQueueFull)", c.state, err)
		}
	}
	set.Unstandby("main")
	set.Unfail("main")
	if err := sp.submit("main", "in-1.json", req); err == nil || errors.Is(err, triggers.ErrQueueFull) {
		t.Errorf("an inbox file of a desk not in the config: %v, want it rejected", err)
	}
}

// TestSetForgetsAFailureWhenTheDeskStandsByOrStarts: a desk that failed
// to start here and then stands by (another host runs it) or starts again
// is no longer listed failed (Failed, Statuses): /healthz and
// deskd_desk_failed stop reporting it.
func TestSetForgetsAFailureWhenTheDeskStandsByOrStarts(t *testing.T) {
	for name, move := range map[string]func(*Set){
		"standby":  func(s *Set) { s.Standby("main", &Owner{Host: "b", Epoch: 2}) },
		"starting": func(s *Set) { s.Own("main", Owner{Host: "a", Epoch: 2}) },
	} {
		set := NewSet()
		set.Fail("main", Failure{Reason: "a test's failure"})
		move(set)
		if f := set.Failed(); len(f) != 0 {
			t.Errorf("%s after a failure: Failed = %v, want none", name, f)
		}
		if sts := set.Statuses(); len(sts) != 1 || sts[0].State == StateFailed {
			t.Errorf("%s after a failure: Statuses = %+v, want main once, not failed", name, sts)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	h := newHeartbeat(clk)
	if !h.Fresh(10 * time.Second) {
		t.Error("a new heartbeat is not fresh")
	}
	clk.Advance(10 * time.Second)
	if h.Fresh(10 * time.Second) {
		t.Error("fresh 10s after the last beat, with maxAge 10s")
	}
	h.Beat()
	if !h.Fresh(10 * time.Second) {
		t.Error("not fresh right after Beat")
	}
}
