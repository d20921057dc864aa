package desk

// The desk's folder as the desk page's API reaches it: reads go to the
// folder directly; the operator's changes (a restore of Memory.md, an
// undo of a curator's change) are done on the desk's loop between turns,
// so that none meets a rollover's fold or review, and are announced.

import (
	"context"
	"errors"
	"fmt"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
)

// ErrNoFolder is the error of a desk that was built without a folder
// (Options.Folder).
var ErrNoFolder = errors.New("the desk has no folder")

// Folder returns the desk's folder; nil when it was built without one.
func (d *Desk) Folder() *memory.Folder { return d.o.Folder }

// RestoreMemory makes the kept version of Memory.md that version names
// (its id or a unique prefix: memory.Folder.ResolveMemoryVersion) the
// current one, and announces memory.restored with by. It waits for the
// running turn, if any, to end: a rollover's fold is never under way
// meanwhile.
func (d *Desk) RestoreMemory(ctx context.Context, version, by string) (restored memory.MemoryVersion, keptAs string, err error) {
	if d.o.Folder == nil {
		return memory.MemoryVersion{}, "", fmt.Errorf("restore Memory.md of desk %s: %w", d.o.Name, ErrNoFolder)
	}
	if err := d.onLoop(ctx, func() {
		restored, keptAs, err = d.o.Folder.RestoreMemory(version)
	}); err != nil {
		return memory.MemoryVersion{}, "", fmt.Errorf("restore Memory.md of desk %s: %w", d.o.Name, err)
	}
	if err != nil {
		return memory.MemoryVersion{}, "", err
	}
	event.Publish(d.o.Bus, event.MemoryRestored{Header: d.header(), Version: restored.ID, KeptAs: keptAs, By: by})
	return restored, keptAs, nil
}

// UndoSkillChange undoes the curator's change id (curator.Reviewer.Undo;
// the desk's schedules protect the skills they name, as in a review),
// returns the undo's ledger entry, and announces skills.undone with by.
// Like RestoreMemory it runs between turns.
func (d *Desk) UndoSkillChange(ctx context.Context, id, by string) (entry curator.LedgerEntry, err error) {
	if d.o.Folder == nil {
		return curator.LedgerEntry{}, fmt.Errorf("undo change %s of desk %s: %w", id, d.o.Name, ErrNoFolder)
	}
	if err := d.onLoop(ctx, func() {
		r := curator.Reviewer{Folder: d.o.Folder, Now: d.o.Clock.Now, ScheduleTexts: d.scheduleTexts()}
		entry, err = r.Undo(id)
	}); err != nil {
		return curator.LedgerEntry{}, fmt.Errorf("undo change %s of desk %s: %w", id, d.o.Name, err)
	}
	if err != nil {
		return curator.LedgerEntry{}, err
	}
	event.Publish(d.o.Bus, event.SkillsUndone{Header: d.header(), Change: id, Undo: entry.ID, Skill: entry.Skill, By: by})
	return entry, nil
}

// scheduleTexts returns the texts of the desk's schedules in force.
func (d *Desk) scheduleTexts() []string {
	d.mu.Lock()
	sched := d.sched
	d.mu.Unlock()
	var out []string
	for _, e := range sched.Entries {
		out = append(out, e.Text)
	}
	return out
}

// onLoop runs fn on the desk's loop, between turns and rollovers, and
// returns once it has run; on a desk that has stopped, where nothing
// folds any more, it runs fn at once. Once the loop has taken fn it is
// waited for whatever ctx does, so that the caller knows its outcome.
func (d *Desk) onLoop(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	select {
	case d.tasks <- func() { defer close(done); fn() }:
	case <-d.done:
		fn()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}
