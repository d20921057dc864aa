package desktest_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

func TestAWiredDeskAnswersAndSurvivesARestart(t *testing.T) {
	d := desktest.New(t, desktest.Options{})
	if at := desktest.At("2026-03-02T04:30:00Z"); !at.Equal(desktest.Start()) || desktest.Day().DateOf(at).String() != "2026-03-02" {
		t.Errorf("At(04:30Z) = %v, want Start, 10:00 IST on 2 March (%v)", at, desktest.Start())
	}
	if !d.Clock.Now().Equal(desktest.Start()) {
		t.Errorf("the clock reads %v, want %v", d.Clock.Now(), desktest.Start())
	}
	d.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "Good morning"})
	done := eventtest.NextWhere(d.Events, func(e event.TurnCompleted) bool { return e.Trigger == "a" })
	if s, ok := d.Desk.Trigger("a"); !ok || s.State != triggers.StateAnswered || s.Session != done.Session {
		t.Errorf("Trigger(a) = %+v, %v", s, ok)
	}
	d.Close()

	again := desktest.New(t, desktest.Options{Dir: d.Dir, Clock: d.Clock})
	if s, ok := again.Desk.Trigger("a"); !ok || s.State != triggers.StateAnswered {
		t.Errorf("after a restart, Trigger(a) = %+v, %v", s, ok)
	}
	if ev := eventtest.Next[event.SessionStarted](again.Events); ev.Reason != "resumed" || ev.Session != done.Session {
		t.Errorf("after a restart, session.started = %+v, want %s resumed", ev, done.Session)
	}
}

func TestGateHoldsTurnsUntilReleased(t *testing.T) {
	g := desktest.NewGate()
	d := desktest.New(t, desktest.Options{Model: g})
	d.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "first line\nsecond"})
	if got := g.Expect(t, "first line"); !strings.Contains(got, "second") {
		t.Errorf("the gate got %q", got)
	}
	if st := d.Desk.Status(); st.Running == nil || st.Running.Trigger != "a" {
		t.Errorf("Status while the gate holds the turn = %+v", st)
	}
	g.Release()
	eventtest.NextWhere(d.Events, func(e event.TurnCompleted) bool { return e.Trigger == "a" })
	g.ExpectNoCall(t, "after the only turn")
	if s, _ := d.Desk.Trigger("a"); s.Reply != "ok: first line" {
		t.Errorf("the gate answered %q, want ok: first line", s.Reply)
	}
}
