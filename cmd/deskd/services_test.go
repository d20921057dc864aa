package main

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/deskd/deskd/desk"
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
		{"disk refused the write", fmt.Errorf("desk main: queue trigger x: %w: %w", desk.ErrStorage, syscall.ENOSPC), true},
		{"desk restarting", fmt.Errorf("desk main: %w", desk.ErrStopped), true},
		{"bad trigger", errors.New("text is empty"), false},
	} {
		got := spoolSubmitError("main", tt.err)
		if keep := errors.Is(got, triggers.ErrQueueFull); keep != tt.keep {
			t.Errorf("%s: spoolSubmitError = %v; keeps the file %v, want %v", tt.name, got, keep, tt.keep)
		}
	}
}
