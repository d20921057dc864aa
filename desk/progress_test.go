package desk_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// heldRollover is a model whose summaries and folds wait for the test:
// each such call's task is sent on calls, and it answers as the scripted
// model does once release receives.
type heldRollover struct {
	calls   chan router.Task
	release chan struct{}
}

func (m *heldRollover) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task == router.TaskSummary || req.Task == router.TaskFold {
		m.calls <- req.Task
		select {
		case <-m.release:
		case <-ctx.Done():
			return router.Response{}, ctx.Err()
		}
	}
	return router.Scripted{}.Complete(ctx, req)
}

func (m *heldRollover) expect(t *testing.T, want router.Task) {
	t.Helper()
	select {
	case got := <-m.calls:
		if got != want {
			t.Fatalf("the model got a %s call, want %s", got, want)
		}
	case <-time.After(eventtest.Timeout):
		t.Fatalf("no %s call within %v", want, eventtest.Timeout)
	}
}

// lineWriter sends each log line written to it on lines.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	w.lines <- string(bytes.TrimSpace(p))
	return len(p), nil
}

// waitLine waits for a log line containing want.
func waitLine(t *testing.T, lines <-chan string, want string) string {
	t.Helper()
	deadline := time.After(eventtest.Timeout)
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("no log line with %q within %v", want, eventtest.Timeout)
			return ""
		}
	}
}

// waitStatus waits until the desk's status satisfies ok. The status
// changes after the event that says a step ended: it is looked at again on
// each event and every few milliseconds.
func waitStatus(t *testing.T, d *desktest.Desk, why string, ok func(desk.Status) bool) desk.Status {
	t.Helper()
	deadline := time.After(eventtest.Timeout)
	for {
		changed := d.Events.Changed()
		s := d.Desk.Status()
		if ok(s) {
			return s
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: status is %+v (running %+v)", why, s, s.Running)
			return s
		}
	}
}

func TestRolloverAtTheBoundaryShowsItsPhases(t *testing.T) {
	m := &heldRollover{calls: make(chan router.Task, 10), release: make(chan struct{})}
	d := desktest.New(t, desktest.Options{Model: m, StillEvery: 10 * time.Second})
	lines := make(chan string, 100)
	cancel := desk.LogEvents(d.Bus, zerolog.New(lineWriter{lines}), time.UTC, nil)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(m.release)

	d.Submit(triggers.Trigger{ID: "t1", Kind: triggers.Manual, Text: "Buy NIFTY?"})
	eventtest.Next[event.TurnCompleted](d.Events)
	if err := d.Folder.AppendNote(desktest.Day().DateOf(d.Clock.Now()), "NIFTY gapped up."); err != nil {
		t.Fatal(err)
	}
	old := d.Desk.Status()
	boundary := desktest.At("2026-03-02T18:30:00Z") // 00:00 IST, 3 March
	ctx, stop := context.WithTimeout(t.Context(), eventtest.Timeout)
	defer stop()
	if err := d.Clock.WaitTimerAt(ctx, boundary); err != nil {
		t.Fatal(err)
	}
	d.Clock.Set(boundary)

	m.expect(t, router.TaskSummary)
	s := d.Desk.Status()
	if s.State != desk.StateRollingOver || s.Running == nil || s.Running.Kind != desk.KindRollover || s.Running.Trigger != "" ||
		s.Running.Phase != desk.PhaseSummarising || !s.Running.Since.Equal(boundary) || !s.Running.PhaseSince.Equal(boundary) {
		t.Fatalf("while summarising: state %s, running %+v; want rolling_over, a rollover summarising since %s", s.State, s.Running, boundary)
	}
	if s.TradingDate != old.TradingDate {
		t.Errorf("while summarising the trading date is %s, want the old session's %s", s.TradingDate, old.TradingDate)
	}
	waitLine(t, lines, "rollover of desk main: summarising session "+old.Session+" (2026-03-02)")

	if err := d.Clock.WaitTimerAt(ctx, boundary.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	d.Clock.Set(boundary.Add(10 * time.Second))
	waitLine(t, lines, "rollover of desk main: still summarising after 10s")

	d.Clock.Set(boundary.Add(25 * time.Second))
	m.release <- struct{}{}
	waitLine(t, lines, "rollover of desk main: summarised in 25s")
	m.expect(t, router.TaskFold)
	s = waitStatus(t, d, "folding", func(s desk.Status) bool { return s.Running != nil && s.Running.Phase == desk.PhaseFolding })
	if s.State != desk.StateRollingOver || !s.Running.Since.Equal(boundary) || !s.Running.PhaseSince.Equal(boundary.Add(25*time.Second)) {
		t.Errorf("while folding: state %s, running %+v", s.State, s.Running)
	}
	m.release <- struct{}{}
	eventtest.NextWhere(d.Events, func(e event.SessionStarted) bool { return e.Previous == old.Session })
	s = waitStatus(t, d, "idle after the rollover", func(s desk.Status) bool { return s.State == desk.StateIdle })
	if s.Running != nil || s.TradingDate != "2026-03-03" || s.Session == old.Session {
		t.Errorf("after the rollover: running %+v, date %s, session %s (old %s)", s.Running, s.TradingDate, s.Session, old.Session)
	}
}

// lazyKeeper is the real keeper, but never due when the desk's loop asks:
// the desk rolls over only at the start of a turn (keeper.Prepare asks the
// keeper itself), as it does after an eager attempt failed.
type lazyKeeper struct{ *keeper.Keeper }

func (lazyKeeper) Due() bool { return false }

func TestLazyRolloverShowsItsPhasesInTheTurn(t *testing.T) {
	m := &heldRollover{calls: make(chan router.Task, 10), release: make(chan struct{})}
	clk := clock.NewFake(desktest.Start())
	bus := event.New()
	defer bus.Close()
	events := eventtest.WatchAll(t, bus)
	folder, err := memory.OpenFolder(filepath.Join(t.TempDir(), "main"), "main", clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(router.Options{Desk: "main", Folder: folder, Clock: clk, Day: desktest.Day(), Bus: bus,
		Settings: router.Settings{Route: []router.Model{{Name: "m", Provider: "test", Client: m}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var d *desk.Desk
	k := keeper.New(keeper.Options{Desk: "main", Router: r, Folder: folder, Bus: bus, Clock: clk, Day: desktest.Day(),
		Progress: func(p keeper.Progress) { d.KeeperProgress(p) }})
	ledger, err := triggers.OpenLedger(folder.Path(triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	d, err = desk.New(desk.Options{Name: "main", Keeper: lazyKeeper{k}, Router: r, Ledger: ledger, Clock: clk, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { close(m.release); cancel(); <-done }() // a held call answers, the turn ends
	<-d.Started()

	if _, err := d.Submit(triggers.Trigger{ID: "t1", Kind: triggers.Manual, Text: "Buy NIFTY?"}); err != nil {
		t.Fatal(err)
	}
	eventtest.Next[event.TurnCompleted](events)
	if err := folder.AppendNote(desktest.Day().DateOf(clk.Now()), "NIFTY gapped up."); err != nil {
		t.Fatal(err)
	}
	boundary := desktest.At("2026-03-02T18:30:00Z")
	clk.Set(boundary)
	if _, err := d.Submit(triggers.Trigger{ID: "t2", Kind: triggers.Manual, Text: "And today?"}); err != nil {
		t.Fatal(err)
	}
	m.expect(t, router.TaskSummary)
	s := d.Status()
	if s.State != desk.StateRunning || s.Running == nil || s.Running.Trigger != "t2" || s.Running.Phase != desk.PhaseSummarising ||
		!s.Running.PhaseSince.Equal(boundary) {
		t.Fatalf("while the turn summarises: state %s, running %+v; want running t2, summarising", s.State, s.Running)
	}
	clk.Set(boundary.Add(3 * time.Second))
	m.release <- struct{}{}
	m.expect(t, router.TaskFold)
	s = d.Status()
	if s.Running == nil || s.Running.Trigger != "t2" || s.Running.Phase != desk.PhaseFolding || !s.Running.PhaseSince.Equal(boundary.Add(3*time.Second)) {
		t.Fatalf("while the turn folds: running %+v; want t2 folding since %s", s.Running, boundary.Add(3*time.Second))
	}
	m.release <- struct{}{}
	started := eventtest.Next[event.TurnStarted](events)
	if started.Trigger != "t1" {
		t.Fatalf("turn.started = %+v, want t1's first", started)
	}
	if started = eventtest.Next[event.TurnStarted](events); started.Trigger != "t2" {
		t.Errorf("turn.started = %+v, want t2", started)
	}
	if c := eventtest.Next[event.TurnCompleted](events); c.Trigger != "t2" {
		t.Errorf("turn.completed = %+v, want t2", c)
	}
}

// TestTriggerProgressSame: what a watcher counts as a change.
func TestTriggerProgressSame(t *testing.T) {
	queued := func(pos, depth int) desk.TriggerProgress {
		return desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t", State: triggers.StateQueued, Position: pos}, Depth: depth}
	}
	running := func(ph desk.Phase) desk.TriggerProgress {
		return desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t", State: triggers.StateRunning}, Phase: ph}
	}
	paused := queued(1, 1)
	paused.Paused = &desk.Pause{By: "alice"}
	for _, tt := range []struct {
		name string
		p, q desk.TriggerProgress
		same bool
	}{
		{"same place", queued(2, 3), queued(2, 3), true},
		{"moved up", queued(2, 3), queued(1, 3), false},
		{"taken from the queue", queued(1, 1), queued(0, 0), true},
		{"paused", queued(1, 1), paused, false},
		{"next phase", running(desk.PhaseSummarising), running(desk.PhaseModel), false},
		{"started", queued(1, 1), running(""), false},
	} {
		if got := tt.p.Same(tt.q); got != tt.same {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.same)
		}
	}
}
