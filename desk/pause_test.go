package desk_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// noCall fails the test if the model was called: synctest.Wait first lets
// every goroutine of the bubble run until it blocks.
func noCall(t *testing.T, g *desktest.Gate, why string) {
	t.Helper()
	synctest.Wait()
	g.ExpectNoCall(t, why)
}

// TestPauseQueues: a paused desk runs no turn; its trigger waits in the
// queue, and runs once the desk is resumed. The status says who paused it,
// when and why.
func TestPauseQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := desktest.NewGate()
		h := desktest.New(t, desktest.Options{Model: g, PauseFile: true})
		p, changed, err := h.Desk.Pause("asha", "risk check")
		if err != nil || !changed || p.By != "asha" || p.Reason != "risk check" || !p.At.Equal(start) {
			t.Fatalf("Pause = %+v, %v, %v", p, changed, err)
		}
		if ev := eventtest.Next[event.DeskPaused](h.Events); ev.By != "asha" || ev.Reason != "risk check" || ev.Desk != "main" {
			t.Errorf("desk.paused = %+v", ev)
		}
		h.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "a"})
		noCall(t, g, "paused")
		st := h.Desk.Status()
		if st.State != "paused" || st.Paused == nil || st.Paused.By != "asha" || st.Paused.Reason != "risk check" ||
			st.QueueDepth != 1 || st.PausedTriggers != "queue" {
			t.Errorf("Status while paused = %+v (paused %+v)", st, st.Paused)
		}
		if s, _ := h.Desk.Trigger("a"); s.State != triggers.StateQueued {
			t.Errorf("Trigger(a) while paused = %+v", s)
		}
		if again, changed, err := h.Desk.Pause("ravi", "other"); err != nil || changed || again.By != "asha" {
			t.Errorf("Pause again = %+v, %v, %v; want the first pause, unchanged", again, changed, err)
		}

		was, err := h.Desk.Resume("ravi")
		if err != nil || was == nil || was.By != "asha" {
			t.Fatalf("Resume = %+v, %v", was, err)
		}
		if ev := eventtest.Next[event.DeskResumed](h.Events); ev.By != "ravi" {
			t.Errorf("desk.resumed = %+v", ev)
		}
		g.Expect(t, "a")
		g.Release()
		if done := eventtest.Next[event.TurnCompleted](h.Events); done.Trigger != "a" {
			t.Errorf("turn.completed = %+v", done)
		}
		if st := h.Desk.Status(); st.Paused != nil || st.State == "paused" {
			t.Errorf("Status after Resume = %+v", st)
		}
		if was, err := h.Desk.Resume("ravi"); was != nil || err != nil {
			t.Errorf("Resume of a desk not paused = %+v, %v", was, err)
		}
	})
}

// TestPauseLetsRunningTurnFinish: a pause does not cut off the running
// turn; no turn starts after it.
func TestPauseLetsRunningTurnFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, g := holding(t, desktest.Options{}, "a", triggers.Manual)
		if _, _, err := h.Desk.Pause("asha", ""); err != nil {
			t.Fatal(err)
		}
		h.Submit(triggers.Trigger{ID: "b", Kind: triggers.Manual, Text: "b"})
		g.Release()
		if done := eventtest.Next[event.TurnCompleted](h.Events); done.Trigger != "a" {
			t.Errorf("turn.completed = %+v, want a's", done)
		}
		noCall(t, g, "paused after a's turn")
		if st := h.Desk.Status(); st.State != "paused" || st.Running != nil {
			t.Errorf("Status = %+v", st)
		}
		if _, err := h.Desk.Resume("asha"); err != nil {
			t.Fatal(err)
		}
		g.Expect(t, "b")
		g.Release()
		eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "b" })
	})
}

// TestPauseRefuses: with RefusePaused, a paused desk refuses triggers
// (ErrPaused, saying who paused it and why), and its schedule slots are
// recorded dropped and announced as missed.
func TestPauseRefuses(t *testing.T) {
	spec, err := triggers.ParseSpec("*/5 * * * *", ist)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		h := desktest.New(t, desktest.Options{RefusePaused: true, Schedules: []triggers.Entry{{Name: "tape", Spec: spec, Text: "Tape."}}})
		if _, _, err := h.Desk.Pause("asha", "broker outage"); err != nil {
			t.Fatal(err)
		}
		_, err := h.Desk.Submit(triggers.Trigger{ID: "x", Kind: triggers.Manual, Text: "x"})
		var pe *desk.PausedError
		if !errors.Is(err, desk.ErrPaused) || !errors.As(err, &pe) || pe.Pause.By != "asha" ||
			!strings.Contains(err.Error(), "broker outage") {
			t.Fatalf("Submit to a paused desk that refuses = %v", err)
		}
		if _, ok := h.Desk.Trigger("x"); ok {
			t.Error("the refused trigger is in the ledger")
		}
		if ev := eventtest.Next[event.TriggerDropped](h.Events); ev.Trigger != "x" || !strings.Contains(ev.Reason, "paused") {
			t.Errorf("trigger.dropped = %+v", ev)
		}
		synctest.Wait()
		h.Clock.Set(start.Add(5 * time.Minute))
		missed := eventtest.Next[event.ScheduleMissed](h.Events)
		if !missed.Slot.Equal(start.Add(5*time.Minute)) || !strings.Contains(missed.Reason, "paused") {
			t.Errorf("schedule.missed = %+v", missed)
		}
		if s, _ := h.Desk.Trigger(triggers.SlotID("tape", start.Add(5*time.Minute))); s.State != triggers.StateDropped {
			t.Errorf("the slot while paused = %+v, want dropped", s)
		}
		if st := h.Desk.Status(); st.PausedTriggers != "refuse" {
			t.Errorf("Status.PausedTriggers = %q", st.PausedTriggers)
		}
		if _, err := h.Desk.Resume("asha"); err != nil {
			t.Fatal(err)
		}
		h.Submit(triggers.Trigger{ID: "y", Kind: triggers.Manual, Text: "y"})
		eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "y" })
	})
}

// TestPauseSurvivesRestart: the pause is in the desk's folder; a desk
// made again on it is paused, by the same person for the same reason,
// and runs its waiting trigger only when resumed.
func TestPauseSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		g := desktest.NewGate()
		h := desktest.New(t, desktest.Options{Model: g, Dir: dir, PauseFile: true})
		if _, _, err := h.Desk.Pause("asha", "risk check"); err != nil {
			t.Fatal(err)
		}
		h.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "a"})
		h.Close()
		var rec map[string]any
		if b, err := os.ReadFile(filepath.Join(dir, "main", desk.PauseFile)); err != nil || json.Unmarshal(b, &rec) != nil ||
			rec["paused"] != true || rec["by"] != "asha" || rec["reason"] != "risk check" {
			t.Fatalf("pause file = %v (%v)", rec, err)
		}

		h2 := desktest.New(t, desktest.Options{Model: g, Dir: dir, PauseFile: true})
		p := h2.Desk.Paused()
		if p == nil || p.By != "asha" || p.Reason != "risk check" || !p.At.Equal(start) {
			t.Fatalf("after a restart Paused() = %+v", p)
		}
		if st := h2.Desk.Status(); st.State != "paused" || st.QueueDepth != 1 {
			t.Errorf("Status after a restart = %+v", st)
		}
		noCall(t, g, "paused, after a restart")
		if _, err := h2.Desk.Resume("ravi"); err != nil {
			t.Fatal(err)
		}
		g.Expect(t, "a")
		g.Release()
		eventtest.Next[event.TurnCompleted](h2.Events)
	})
}

// TestPauseDamagedFile: a pause file that does not parse keeps the desk
// paused, saying so; resuming clears it.
func TestPauseDamagedFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main", desk.PauseFile), []byte("{paused"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := desktest.New(t, desktest.Options{Dir: dir, PauseFile: true})
	p := h.Desk.Paused()
	if p == nil || !strings.Contains(p.Reason, "damaged") {
		t.Fatalf("Paused() with a damaged pause file = %+v", p)
	}
	if _, err := h.Desk.Resume("asha"); err != nil {
		t.Fatal(err)
	}
	if p := h.Desk.Paused(); p != nil {
		t.Errorf("Paused() after Resume = %+v", p)
	}
}

// TestConfigureBetweenTurns: new router settings reach the desk between
// turns: Configure returns while a turn runs, the running turn ends on
// the old model, and the next turn uses the new one.
func TestConfigureBetweenTurns(t *testing.T) {
	old, next := desktest.NewGate(), desktest.NewGate()
	h := desktest.New(t, desktest.Options{Model: old})
	h.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "a"})
	old.Expect(t, "a")
	if err := h.Desk.Configure(desk.Settings{Router: &router.Settings{
		Route: []router.Model{{Name: "n", Provider: "test", Client: next}}, Instructions: "new instructions",
	}}); err != nil {
		t.Fatal(err)
	}
	h.Submit(triggers.Trigger{ID: "b", Kind: triggers.Manual, Text: "b"})
	old.Release()
	if done := eventtest.Next[event.TurnCompleted](h.Events); done.Trigger != "a" || done.Model != "m" {
		t.Errorf("the running turn = %+v, want a on the old model m", done)
	}
	next.Expect(t, "b")
	next.Release()
	if done := eventtest.Next[event.TurnCompleted](h.Events); done.Trigger != "b" || done.Model != "n" {
		t.Errorf("the next turn = %+v, want b on the new model n", done)
	}
	if st := h.Desk.Status(); st.Model != "n" {
		t.Errorf("Status.Model = %s, want n", st.Model)
	}
}

// TestStopLetsRunningTurnFinish: when the desk is told to stop during a
// turn, the turn finishes (within the shutdown timeout) and is answered;
// Run then returns, and later triggers are refused with ErrStopped.
func TestStopLetsRunningTurnFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, g := holding(t, desktest.Options{}, "a", triggers.Manual)
		h.Cancel()
		synctest.Wait()
		select {
		case err := <-h.Done():
			t.Fatalf("Run returned (%v) while its turn was running", err)
		default:
		}
		g.Release()
		if err := <-h.Done(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if s, _ := h.Desk.Trigger("a"); s.State != triggers.StateAnswered {
			t.Errorf("Trigger(a) = %+v, want answered", s)
		}
		if _, err := h.Desk.Submit(triggers.Trigger{ID: "late", Kind: triggers.Manual, Text: "late"}); !errors.Is(err, desk.ErrStopped) {
			t.Errorf("Submit after Run returned = %v, want ErrStopped", err)
		}
		if err := h.Desk.Configure(desk.Settings{}); !errors.Is(err, desk.ErrStopped) {
			t.Errorf("Configure after Run returned = %v, want ErrStopped", err)
		}
	})
}

// TestCutShort: a stopping desk told to hurry cancels its running turn at
// once, long before the shutdown timeout, and records it interrupted.
func TestCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := holding(t, desktest.Options{}, "a", triggers.Manual)
		h.Cancel()
		h.Desk.CutShort()
		if err := <-h.Done(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		in := eventtest.Next[event.TurnInterrupted](h.Events)
		if in.Trigger != "a" || !strings.Contains(in.Reason, "second signal") {
			t.Errorf("turn.interrupted = %+v", in)
		}
		if s, _ := h.Desk.Trigger("a"); s.State != triggers.StateInterrupted {
			t.Errorf("Trigger(a) = %+v, want interrupted", s)
		}
		if !h.Clock.Now().Equal(start) {
			t.Errorf("the clock moved to %v: the turn was cut by the timeout, not by CutShort", h.Clock.Now())
		}
	})
}

// TestStoppedReason: desk.stopped gives the cause its context was
// cancelled with.
func TestStoppedReason(t *testing.T) {
	h := desktest.New(t, desktest.Options{NoStart: true})
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.Desk.Run(ctx) }()
	<-h.Desk.Started()
	cancel(errors.New("its desk file was removed"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ev := eventtest.Next[event.DeskStopped](h.Events); ev.Reason != "its desk file was removed" {
		t.Errorf("desk.stopped reason = %q", ev.Reason)
	}
}
