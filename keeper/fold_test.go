package keeper_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// folding is a model whose fold answers come from fold; during is run
// inside the fold call, before it answers (an operator's edit, say).
type folding struct {
	fold   func(in *router.FoldInput) string
	during func()
	folds  int
}

func (f *folding) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task != router.TaskFold {
		return router.Scripted{}.Complete(ctx, req)
	}
	f.folds++
	if f.during != nil {
		f.during()
		f.during = nil
	}
	return router.Response{Text: f.fold(req.Fold)}, nil
}

// foldDay runs one turn on 2026-03-01 with a note, then rolls over at the
// next day, with model m answering folds. prepare, if set, sees the folder
// before the rollover.
func foldDay(t *testing.T, m *folding, prior string, prepare func(*memory.Folder)) (*memory.Folder, []event.MemoryFolded) {
	t.Helper()
	e := newEnv(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), 0)
	folder, err := memory.OpenFolder(e.dir, "main", e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if prior != "" {
		if _, err := folder.WriteMemory(prior); err != nil {
			t.Fatal(err)
		}
	}
	if err := folder.AppendNote(memory.Date{Year: 2026, Month: 3, Day: 1}, "NIFTY held 22000"); err != nil {
		t.Fatal(err)
	}
	r, err := router.New(router.Options{Desk: "main", Folder: folder, Clock: e.clock, Day: e.day, Bus: e.bus,
		Settings: router.Settings{Route: []router.Model{{Name: "m", Provider: "test", Client: m}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	folded := eventtest.Watch[event.MemoryFolded](t, e.bus)
	k := keeper.New(keeper.Options{Desk: "main", Router: r, Folder: folder, Bus: e.bus, Clock: e.clock, Day: e.day})
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := &proc{folder: folder, router: r, keeper: k}
	p.turn(t, "t1", "Check the tape")
	if prepare != nil {
		prepare(folder)
	}
	e.clock.Advance(24 * time.Hour)
	if _, err := k.RollOver(t.Context(), "daily_rollover"); err != nil {
		t.Fatal(err)
	}
	e.bus.Close() // delivers every event published
	return folder, eventtest.Rest[event.MemoryFolded](folded)
}

func TestFoldThatDropsMostOfMemoryIsRefused(t *testing.T) {
	prior := "# Lessons\n- one\n- two\n- three\n- four\n"
	m := &folding{fold: func(*router.FoldInput) string { return "- only the new lesson\n" }}
	folder, events := foldDay(t, m, prior, nil)
	if got, _ := folder.ReadMemory(); got != prior {
		t.Fatalf("Memory.md = %q after a refused fold, want it unchanged", got)
	}
	if len(events) != 1 || events[0].Folded || !strings.Contains(events[0].Reason, "keeps 0 of 4 prior entries") {
		t.Fatalf("memory.folded = %+v", events)
	}
	if versions, _ := folder.MemoryHistory(); len(versions) != 0 {
		t.Errorf("a refused fold wrote history: %v", versions)
	}
	// That the notes wait for the next fold, TestUnfoldedNotesStayPendingExactly shows.
}

func TestOperatorEditDuringAFoldSurvives(t *testing.T) {
	m := &folding{fold: func(in *router.FoldInput) string { return in.Memory + "- " + strings.TrimSpace(in.Notes) + "\n" }}
	// The operator's edit lands while the model folds; the first result,
	// built on the text before the edit, must not overwrite it.
	operator := "- one\n- operator: never trade the first minute\n"
	folder, events := foldDay(t, m, "- one\n", func(f *memory.Folder) {
		m.during = func() {
			if _, err := f.WriteMemory(operator); err != nil {
				t.Error(err)
			}
		}
	})
	if got, _ := folder.ReadMemory(); got != operator+"- NIFTY held 22000\n" {
		t.Fatalf("Memory.md = %q, want the notes folded into the operator's text", got)
	}
	if m.folds != 2 {
		t.Errorf("%d fold calls, want 2 (the conflict refolds once)", m.folds)
	}
	if len(events) != 1 || !events[0].Folded || events[0].HistoryPath == "" {
		t.Fatalf("memory.folded = %+v", events)
	}
}

func TestOperatorEditTwiceKeepsTheOperatorsFile(t *testing.T) {
	m := &folding{}
	edits := 0
	var folder *memory.Folder
	m.fold = func(in *router.FoldInput) string {
		edits++
		if _, err := folder.WriteMemory(in.Memory + "- operator edit " + string(rune('0'+edits)) + "\n"); err != nil {
			t.Error(err)
		}
		return in.Memory + "- folded\n"
	}
	f, events := foldDay(t, m, "- one\n", func(f *memory.Folder) { folder = f })
	got, _ := f.ReadMemory()
	if got != "- one\n- operator edit 1\n- operator edit 2\n" {
		t.Fatalf("Memory.md = %q, want the operator's file untouched by the fold", got)
	}
	if len(events) != 1 || events[0].Folded || !strings.Contains(events[0].Reason, "operator's file is kept") {
		t.Fatalf("memory.folded = %+v", events)
	}
}
