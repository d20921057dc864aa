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
