package keeper_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/router"
)

// The instants of the fold tests, in UTC (IST is 5:30 ahead).
const (
	morning1  = "2026-03-01T04:30:00Z" // 10:00 IST, 1 March
	midnight2 = "2026-03-01T18:30:00Z" // 00:00 IST, 2 March
	midnight3 = "2026-03-02T18:30:00Z" // 00:00 IST, 3 March
)

// notesOf is what the scripted fold adds to Memory.md for notes of date.
func notesOf(date, notes string) string { return "\n## Notes of " + date + "\n\n" + notes }

// note appends line to the notes of d.
func (p *proc) note(t *testing.T, d memory.Date, line string) {
	t.Helper()
	if err := p.folder.AppendNote(d, line); err != nil {
		t.Fatal(err)
	}
}

// rollOver rolls the desk over now, as an operator's POST .../rollover does.
func (p *proc) rollOver(t *testing.T, reason event.SessionReason) {
	t.Helper()
	if _, err := p.keeper.RollOver(t.Context(), reason); err != nil {
		t.Fatalf("RollOver(%s): %v", reason, err)
	}
}

// wantFolds checks the notes of every fold call so far.
func (e *env) wantFolds(t *testing.T, want ...string) {
	t.Helper()
	if got := e.model.foldNotes(); !slices.Equal(got, want) {
		t.Errorf("fold calls took notes %q, want %q", got, want)
	}
}

func (p *proc) wantMemory(t *testing.T, want string) {
	t.Helper()
	if got := memorytest.ReadFile(t, p.folder.Path(memory.MemoryFile)); got != want {
		t.Errorf("Memory.md =\n%q\nwant\n%q", got, want)
	}
}

func TestNotesAfterSameDayRolloverAreFolded(t *testing.T) {
	e := newEnv(t, desktest.At(morning1), 0)
	folded := eventtest.Watch[event.MemoryFolded](t, e.bus)
	p := e.start(keeper.Options{})
	if _, err := p.folder.WriteMemory(lessons); err != nil {
		t.Fatal(err)
	}
	p.note(t, day1, "A: NIFTY gapped up.")
	p.turn(t, "t1", "Should we buy NIFTY?")
	p.rollOver(t, "manual_rollover")

	// Two more notes the same trading date, then the midnight rollover.
	p.note(t, day1, "B: the gap filled by noon.")
	p.note(t, day1, "C: do not chase gaps.")
	p.turn(t, "t2", "Close half.")
	e.clock.Set(desktest.At(midnight2))
	p.turn(t, "t3", "Good morning.")

	e.wantFolds(t, "A: NIFTY gapped up.\n", "B: the gap filled by noon.\nC: do not chase gaps.\n")
	p.wantMemory(t, lessons+notesOf("2026-03-01", "A: NIFTY gapped up.\n")+
		notesOf("2026-03-01", "B: the gap filled by noon.\nC: do not chase gaps.\n"))
	e.bus.Close() // delivers every event published
	events := eventtest.Rest[event.MemoryFolded](folded)
	if len(events) != 2 {
		t.Fatalf("%d memory.folded events, want 2: %+v", len(events), events)
	}
	for i, ev := range events {
		if !ev.Folded || !slices.Equal(ev.Notes, []string{"2026-03-01"}) {
			t.Errorf("memory.folded %d = %+v, want folded, notes [2026-03-01]", i+1, ev)
		}
	}
}

func TestUnfoldedNotesStayPendingExactly(t *testing.T) {
	tests := []struct {
		name   string
		spoil  func(e *env) // makes the second fold fail or be refused
		mend   func(e *env)
		reason string // in the spoiled fold's memory.folded
	}{
		{"the fold call fails",
			func(e *env) { e.model.setFail(router.TaskFold, true) },
			func(e *env) { e.model.setFail(router.TaskFold, false) },
			"fold failed"},
		{"the guard refuses the result",
			func(e *env) { e.model.setFoldText("- only a new lesson\n") },
			func(e *env) { e.model.setFoldText("") },
			"fold refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, desktest.At(morning1), 0)
			folded := eventtest.Watch[event.MemoryFolded](t, e.bus)
			p := e.start(keeper.Options{SummaryAttempts: 1})
			if _, err := p.folder.WriteMemory(lessons); err != nil {
				t.Fatal(err)
			}
			p.note(t, day1, "A")
			p.turn(t, "t1", "one")
			p.rollOver(t, "manual_rollover") // folds A

			p.note(t, day1, "B")
			p.turn(t, "t2", "two")
			tt.spoil(e)
			p.rollOver(t, "manual_rollover") // takes B, keeps nothing
			tt.mend(e)
			afterSpoiled := lessons + notesOf("2026-03-01", "A\n")
			p.wantMemory(t, afterSpoiled)

			p.note(t, day1, "C")
			p.turn(t, "t3", "three")
			e.clock.Set(desktest.At(midnight2))
			p.turn(t, "t4", "four") // folds B and C, not A again

			wantFolds := []string{"A\n", "B\n", "B\nC\n"}
			if got := e.model.foldNotes(); !slices.Equal(got, wantFolds) {
				t.Errorf("fold calls took notes %q, want %q", got, wantFolds)
			}
			p.wantMemory(t, afterSpoiled+notesOf("2026-03-01", "B\nC\n"))
			e.bus.Close() // delivers every event published
			events := eventtest.Rest[event.MemoryFolded](folded)
			if len(events) != 3 {
				t.Fatalf("%d memory.folded events, want 3: %+v", len(events), events)
			}
			if ev := events[1]; ev.Folded || !strings.Contains(ev.Reason, tt.reason) || !slices.Equal(ev.Notes, []string{"2026-03-01"}) {
				t.Errorf("spoiled fold's memory.folded = %+v, want not folded, %q, notes [2026-03-01]", ev, tt.reason)
			}
			if ev := events[2]; !ev.Folded || !slices.Equal(ev.Notes, []string{"2026-03-01"}) {
				t.Errorf("last memory.folded = %+v, want folded, notes [2026-03-01]", ev)
			}
		})
	}
}

func TestOldFoldedRecordIsMigrated(t *testing.T) {
	e := newEnv(t, desktest.At(morning1), 0)
	// A desk folder of an older deskd: folded-notes.json lists the dates
	// folded; 28 February is not among them.
	for name, text := range map[string]string{
		"notes/2026-02-28.md": "Z: never folded.\n",
		"notes/2026-03-01.md": "A: folded by the older deskd.\n",
		"folded-notes.json":   `["2026-02-27", "2026-03-01"]` + "\n",
	} {
		path := e.dir + "/" + name
		if err := os.MkdirAll(path[:strings.LastIndex(path, "/")], 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	p := e.start(keeper.Options{}) // migrates: 1 March is folded up to here
	p.note(t, day1, "B: written after the upgrade.")
	p.turn(t, "t1", "one")
	e.clock.Set(desktest.At(midnight2))
	p.turn(t, "t2", "two")

	e.wantFolds(t, "### 2026-02-28\n\nZ: never folded.\n\n### 2026-03-01\n\nB: written after the upgrade.\n")

	// The record carried over: the next fold takes only what is new.
	p.note(t, day1, "C: late.")
	p.turn(t, "t3", "three")
	e.clock.Set(desktest.At(midnight3))
	p.turn(t, "t4", "four")
	e.wantFolds(t, "### 2026-02-28\n\nZ: never folded.\n\n### 2026-03-01\n\nB: written after the upgrade.\n",
		"### 2026-03-01\n\nC: late.\n")
}

func TestHandEditedNotesAreFoldedWhole(t *testing.T) {
	tests := []struct {
		name, edit string // the notes file as the operator leaves it
	}{
		{"shrank", "A, corrected.\n"},
		{"edited before the folded end", "A: NIFTY gapped down.\nB: BANKNIFTY weak.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, desktest.At(morning1), 0)
			p := e.start(keeper.Options{})
			p.note(t, day1, "A: NIFTY gapped up.")
			p.note(t, day1, "B: BANKNIFTY weak.")
			p.turn(t, "t1", "one")
			p.rollOver(t, "manual_rollover")

			if err := os.WriteFile(p.folder.Path("notes/2026-03-01.md"), []byte(tt.edit), 0o640); err != nil {
				t.Fatal(err)
			}
			p.note(t, day1, "C: new.")
			p.turn(t, "t2", "two")
			e.clock.Set(desktest.At(midnight2))
			p.turn(t, "t3", "three")
			e.wantFolds(t, "A: NIFTY gapped up.\nB: BANKNIFTY weak.\n", tt.edit+"C: new.\n")
		})
	}
}

func TestCrashBeforeTheFoldedRecordFoldsOnce(t *testing.T) {
	errCrash := errors.New("crash (injected)")
	e := newEnv(t, desktest.At(morning1), 0)
	p1 := e.start(keeper.Options{AfterStep: func(s keeper.Step) error {
		if s == keeper.StepFolded {
			return errCrash
		}
		return nil
	}})
	if _, err := p1.folder.WriteMemory(lessons); err != nil {
		t.Fatal(err)
	}
	p1.note(t, day1, "A")
	p1.turn(t, "t1", "one")
	e.clock.Set(desktest.At(midnight2))
	if _, err := p1.keeper.RollOver(t.Context(), "daily_rollover"); !errors.Is(err, errCrash) {
		t.Fatalf("RollOver: err = %v, want the crash", err)
	}
	// Leave what a crash after Memory.md was written, but before the
	// record of folded notes was, leaves: the record as before the fold
	// (there was none).
	if err := os.Remove(p1.folder.Path("folded-notes.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	p1.note(t, day1, "late") // appended while the desk was down
	if err := p1.router.Close(); err != nil {
		t.Fatal(err)
	}

	p2 := e.start(keeper.Options{})
	p2.turn(t, "t2", "two") // completes the rollover
	p2.wantMemory(t, lessons+notesOf("2026-03-01", "A\n"))
	p2.note(t, day2, "D")
	e.clock.Set(desktest.At(midnight3))
	p2.turn(t, "t3", "three")
	e.wantFolds(t, "A\n", "### 2026-03-01\n\nlate\n\n### 2026-03-02\n\nD\n")
	p2.wantMemory(t, lessons+notesOf("2026-03-01", "A\n")+notesOf("2026-03-02", "### 2026-03-01\n\nlate\n\n### 2026-03-02\n\nD\n"))
}
