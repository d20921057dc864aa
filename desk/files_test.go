package desk_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// TestRestoreMemoryWaitsForTurn: a restore asked for while a turn runs
// (a rollover's fold runs inside a turn) is done once the turn ends, not
// during it; then it is announced.
func TestRestoreMemoryWaitsForTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, g := holding(t, desktest.Options{}, "a", triggers.Manual)
		for _, text := range []string{"v1\n", "v2\n"} {
			if _, err := h.Folder.WriteMemory(text); err != nil {
				t.Fatal(err)
			}
		}
		versions, err := h.Folder.MemoryHistory()
		if err != nil || len(versions) != 1 {
			t.Fatalf("MemoryHistory = %v, %v", versions, err)
		}
		type result struct {
			v      memory.MemoryVersion
			keptAs string
			err    error
		}
		done := make(chan result, 1)
		go func() {
			v, keptAs, err := h.Desk.RestoreMemory(t.Context(), versions[0].ID[:8], "asha")
			done <- result{v, keptAs, err}
		}()
		synctest.Wait()
		if got, _ := h.Folder.ReadMemory(); got != "v2\n" || len(done) != 0 {
			t.Fatalf("Memory.md = %q during the turn: the restore did not wait for it", got)
		}
		g.Release()
		r := <-done
		if r.err != nil || r.v.ID != versions[0].ID || r.keptAs == "" {
			t.Fatalf("RestoreMemory = %+v", r)
		}
		if got, _ := h.Folder.ReadMemory(); got != "v1\n" {
			t.Fatalf("Memory.md = %q after the restore, want v1", got)
		}
		if ev := eventtest.Next[event.MemoryRestored](h.Events); ev.Version != versions[0].ID || ev.KeptAs != r.keptAs || ev.By != "asha" || ev.Desk != "main" {
			t.Errorf("memory.restored = %+v", ev)
		}
	})
}

// TestRestoreMemoryRefusedNotAnnounced: a name that names no version is
// the folder's error, and nothing is announced.
func TestRestoreMemoryRefusedNotAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := desktest.New(t, desktest.Options{})
		if _, _, err := h.Desk.RestoreMemory(t.Context(), "2026", "asha"); !errors.Is(err, memory.ErrUnknownVersion) {
			t.Fatalf("RestoreMemory(2026) = %v, want ErrUnknownVersion", err)
		}
		synctest.Wait()
		eventtest.ExpectNone[event.MemoryRestored](h.Events)
	})
}

// TestRestoreMemoryOfStoppedDesk: a desk that has stopped restores at
// once (nothing folds any more).
func TestRestoreMemoryOfStoppedDesk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := desktest.New(t, desktest.Options{})
		for _, text := range []string{"v1\n", "v2\n"} {
			if _, err := h.Folder.WriteMemory(text); err != nil {
				t.Fatal(err)
			}
		}
		h.Stop()
		versions, _ := h.Folder.MemoryHistory()
		if _, _, err := h.Desk.RestoreMemory(t.Context(), versions[0].ID, "asha"); err != nil {
			t.Fatalf("RestoreMemory of a stopped desk: %v", err)
		}
		if got, _ := h.Folder.ReadMemory(); got != "v1\n" {
			t.Fatalf("Memory.md = %q, want v1", got)
		}
	})
}
