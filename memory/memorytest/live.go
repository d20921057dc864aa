package memorytest

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// Live is a real router and keeper over the folder of a Desk, on a fake
// clock, with the offline scripted model and the built-in tools: it writes
// the desk folder the way the daemon does.
type Live struct {
	Clock  *clock.Fake
	Bus    *event.Bus
	Folder *memory.Folder
	Router *router.Router
	Keeper *keeper.Keeper
	t      testing.TB
}

// NewLive starts the desk of d at start (RFC 3339; its first session),
// trading dates in Asia/Kolkata. Everything it opens is closed when the
// test ends.
func NewLive(t testing.TB, d *Desk, start string) *Live {
	t.Helper()
	ist, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	day := memory.TradingDay{Location: ist}
	l := &Live{t: t, Clock: clock.NewFake(UTC(t, start)), Bus: event.New()}
	t.Cleanup(l.Bus.Close)
	l.Folder, err = memory.OpenFolder(d.DeskDir, "main", l.Clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	l.Router, err = router.New(router.Options{Desk: "main", Folder: l.Folder, Clock: l.Clock, Day: day, Bus: l.Bus,
		Settings: router.Settings{
			Route:        []router.Model{{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}}},
			Instructions: "You run the main desk.",
			Tools:        router.BuiltinTools(l.Folder, func() memory.Date { return day.DateOf(l.Clock.Now()) }),
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Router.Close() })
	l.Keeper = keeper.New(keeper.Options{Desk: "main", Router: l.Router, Folder: l.Folder, Bus: l.Bus, Clock: l.Clock, Day: day})
	if err := l.Keeper.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return l
}

// Turn runs one manual trigger a minute later, as the desk's loop does:
// the keeper prepares it (rolling over on a new trading date), then the
// router answers it.
func (l *Live) Turn(id, text string) {
	l.t.Helper()
	l.Clock.Advance(time.Minute)
	tr, err := l.Keeper.Prepare(l.t.Context(), triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Manual, Text: text, At: l.Clock.Now()})
	if err != nil {
		l.t.Fatalf("Prepare(%s): %v", id, err)
	}
	if _, err := l.Router.Send(l.t.Context(), tr); err != nil {
		l.t.Fatalf("Send(%s): %v", id, err)
	}
}

// At moves the clock on to when (RFC 3339); it never moves it back.
func (l *Live) At(when string) {
	l.t.Helper()
	if dt := UTC(l.t, when).Sub(l.Clock.Now()); dt > 0 {
		l.Clock.Advance(dt)
	}
}
