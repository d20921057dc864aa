package desk_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

var (
	ist = desktest.Kolkata()
	// start is Monday 2 March 2026, 10:00 IST, where a desk's clock starts.
	start = desktest.Start()
)

// holding returns a desk on a gate, and the gate, with the turn of the
// trigger of id (kind, text id) held at the model.
func holding(t *testing.T, o desktest.Options, id string, kind triggers.Kind) (*desktest.Desk, *desktest.Gate) {
	t.Helper()
	g := desktest.NewGate()
	o.Model = g
	h := desktest.New(t, o)
	h.Submit(triggers.Trigger{ID: id, Kind: kind, Text: id})
	g.Expect(t, id)
	return h, g
}

// TestTurnEndToEnd: a trigger is recorded, run, answered, and its outcome
// is readable from the ledger.
func TestTurnEndToEnd(t *testing.T) {
	h := desktest.New(t, desktest.Options{})
	a := h.Submit(triggers.Trigger{ID: "hello", Kind: triggers.Manual, Text: "Good morning"})
	if a.ID != "hello" || a.Duplicate || a.State != triggers.StateQueued {
		t.Errorf("Submit = %+v", a)
	}
	eventtest.NextWhere(h.Events, func(e event.TriggerQueued) bool { return e.Trigger == "hello" })
	done := eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "hello" })
	s, ok := h.Desk.Trigger("hello")
	if !ok || s.State != triggers.StateAnswered || s.Session != done.Session || s.Turn != 1 || !s.ModelCalled ||
		!strings.Contains(s.Reply, "Good morning") || s.Text != "Good morning" {
		t.Errorf("Trigger(hello) = %+v", s)
	}
	if _, ok := h.Desk.Trigger("nope"); ok {
		t.Error("Trigger(nope) found")
	}
	if a := h.Submit(triggers.Trigger{Kind: triggers.Market, Text: "no id"}); !strings.HasPrefix(a.ID, "t-") {
		t.Errorf("a trigger without id got %q", a.ID)
	}
}

// TestDuplicate: the same id twice is queued once.
func TestDuplicate(t *testing.T) {
	g := desktest.NewGate()
	h := desktest.New(t, desktest.Options{Model: g})
	h.Submit(triggers.Trigger{ID: "x", Kind: triggers.Market, Text: "first"})
	g.Expect(t, "first")
	a := h.Submit(triggers.Trigger{ID: "x", Kind: triggers.Market, Text: "again"})
	if !a.Duplicate || a.State != triggers.StateRunning && a.State != triggers.StateSent {
		t.Errorf("second Submit = %+v, want a duplicate, its turn under way (running, or sent)", a)
	}
	// The gate's model makes no HTTP request: the ledger has no sent
	// record until it answers, and the trigger shows running all the same.
	if s, _ := h.Desk.Trigger("x"); s.State != triggers.StateRunning || !s.ModelCalled || s.StartedAt.IsZero() || s.Position != 0 {
		t.Errorf("Trigger(x) during its turn = %+v, want running, handed to the model, with its start", s)
	}
	g.Release()
	eventtest.Next[event.TurnCompleted](h.Events)
	if a := h.Submit(triggers.Trigger{ID: "x", Kind: triggers.Market, Text: "third"}); !a.Duplicate || a.State != triggers.StateAnswered {
		t.Errorf("third Submit = %+v, want a duplicate, answered", a)
	}
	if n := h.Desk.Status().QueueDepth; n != 0 {
		t.Errorf("queue depth %d, want 0", n)
	}
}

// TestPrioritiesAndOverflow: while a turn runs, queued triggers wait in
// priority order; a full queue refuses and announces the drop.
func TestPrioritiesAndOverflow(t *testing.T) {
	h, g := holding(t, desktest.Options{QueueLimit: 3}, "busy", triggers.Market)
	h.Submit(triggers.Trigger{ID: "sched", Kind: triggers.Schedule, Text: "scheduled"})
	h.Submit(triggers.Trigger{ID: "mkt", Kind: triggers.Market, Text: "market"})
	h.Submit(triggers.Trigger{ID: "man", Kind: triggers.Manual, Text: "manual"})
	_, err := h.Desk.Submit(triggers.Trigger{ID: "over", Kind: triggers.Manual, Text: "one too many"})
	if !errors.Is(err, desk.ErrQueueFull) {
		t.Fatalf("Submit to a full queue = %v, want ErrQueueFull", err)
	}
	drop := eventtest.Next[event.TriggerDropped](h.Events)
	if drop.Trigger != "over" || !strings.Contains(drop.Reason, "queue full") {
		t.Errorf("trigger.dropped = %+v", drop)
	}
	if _, ok := h.Desk.Trigger("over"); ok {
		t.Error("the refused trigger is in the ledger: a retry with its id would be taken for a duplicate")
	}
	st := h.Desk.Status()
	if st.QueueDepth != 3 || st.QueueLimit != 3 || st.Running == nil || st.Running.Trigger != "busy" || st.Running.Phase != "model" || st.State != "running" {
		t.Errorf("Status = %+v", st)
	}
	for _, want := range []string{"manual", "market", "scheduled"} {
		g.Release()
		g.Expect(t, want)
	}
	g.Release()
}

// TestCoalesce: with coalescing, market triggers of one key fold into the
// newest while queued; its turn says how many it replaced, and each
// replaced trigger reports the newest one's answer.
func TestCoalesce(t *testing.T) {
	h, g := holding(t, desktest.Options{Coalesce: true}, "busy", triggers.Manual)
	h.Submit(triggers.Trigger{ID: "n1", Kind: triggers.Market, Key: "NIFTY", Text: "NIFTY 22000"})
	h.Submit(triggers.Trigger{ID: "b1", Kind: triggers.Market, Key: "BANKNIFTY", Text: "BANKNIFTY 48000"})
	h.Submit(triggers.Trigger{ID: "n2", Kind: triggers.Market, Key: "NIFTY", Text: "NIFTY 22050"})
	a := h.Submit(triggers.Trigger{ID: "n3", Kind: triggers.Market, Key: "NIFTY", Text: "NIFTY 22100"})
	if a.Replaced != "n2" {
		t.Errorf("n3 replaced %q, want n2", a.Replaced)
	}
	q := eventtest.NextWhere(h.Events, func(e event.TriggerQueued) bool { return e.Trigger == "n3" })
	if q.Replaced != "n2" || q.Merged != 2 {
		t.Errorf("trigger.queued of n3 = %+v", q)
	}
	if n := h.Desk.Status().QueueDepth; n != 2 {
		t.Errorf("queue depth %d, want 2", n)
	}
	if s, _ := h.Desk.Trigger("n1"); s.State != triggers.StateQueued || s.MergedInto != "n3" {
		t.Errorf("Trigger(n1) = %+v, want queued, merged into n3", s)
	}
	g.Release()
	select {
	case got := <-g.Calls():
		for _, want := range []string{"replaced 2 earlier queued events", "NIFTY 22100", "<market_event"} {
			if !strings.Contains(got, want) {
				t.Errorf("the coalesced turn's text lacks %q:\n%s", want, got)
			}
		}
		if strings.Contains(got, "22000") || strings.Contains(got, "22050") {
			t.Errorf("the coalesced turn carries a replaced event:\n%s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no call")
	}
	g.Release()
	g.Expect(t, "BANKNIFTY 48000")
	g.Release()
	eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "b1" })
	s, _ := h.Desk.Trigger("n1")
	if s.State != triggers.StateAnswered || s.MergedInto != "n3" || s.Reply == "" {
		t.Errorf("Trigger(n1) after the turn = %+v, want answered through n3", s)
	}
}

// TestRecovery: after a crash, queued and not-yet-sent triggers run again
// (queued first, in their order); a trigger whose turn had reached the
// model is interrupted, announced and listed in the status, never rerun.
func TestRecovery(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main", triggers.LedgerFile)
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(r triggers.Record) {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"q1", "run", "sent", "q2", "done"} {
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: "text of " + id}
		rec(triggers.Record{At: start, ID: id, State: triggers.StateQueued, Trigger: &tr})
	}
	rec(triggers.Record{At: start, ID: "run", State: triggers.StateRunning})
	rec(triggers.Record{At: start, ID: "sent", State: triggers.StateRunning})
	rec(triggers.Record{At: start, ID: "sent", State: triggers.StateSent, Session: "s0", Turn: 1})
	rec(triggers.Record{At: start, ID: "done", State: triggers.StateAnswered, Reply: "r"})
	_ = l.Close()

	g := desktest.NewGate()
	h := desktest.New(t, desktest.Options{Model: g, Dir: dir})
	in := eventtest.Next[event.TurnInterrupted](h.Events)
	if in.Trigger != "sent" || in.Session != "s0" || !strings.Contains(in.Reason, "not run again") {
		t.Errorf("turn.interrupted = %+v", in)
	}
	for _, want := range []string{"text of q1", "text of run", "text of q2"} {
		g.Expect(t, want)
		g.Release()
	}
	eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "q2" })
	g.ExpectNoCall(t, "after the recovered triggers")
	st := h.Desk.Status()
	if len(st.Interrupted) != 1 || st.Interrupted[0].ID != "sent" || st.Interrupted[0].State != triggers.StateInterrupted {
		t.Errorf("Status.Interrupted = %+v", st.Interrupted)
	}
	if s, _ := h.Desk.Trigger("run"); s.State != triggers.StateAnswered {
		t.Errorf("Trigger(run) = %+v", s)
	}
}

// TestShutdownInterrupts: a turn still with the model when the shutdown
// timeout passes is cut off and recorded interrupted; one queued behind it
// stays queued for the next start.
func TestShutdownInterrupts(t *testing.T) {
	g := desktest.NewGate()
	dir := t.TempDir()
	h := desktest.New(t, desktest.Options{Model: g, Dir: dir})
	h.Submit(triggers.Trigger{ID: "long", Kind: triggers.Manual, Text: "long"})
	g.Expect(t, "long")
	h.Submit(triggers.Trigger{ID: "next", Kind: triggers.Manual, Text: "next"})
	h.Stop()
	in := eventtest.Next[event.TurnInterrupted](h.Events)
	if in.Trigger != "long" || !strings.Contains(in.Reason, "shutdown timeout") {
		t.Errorf("turn.interrupted = %+v", in)
	}
	if s, _ := h.Desk.Trigger("long"); s.State != triggers.StateInterrupted {
		t.Errorf("Trigger(long) = %+v", s)
	}
	if s, _ := h.Desk.Trigger("next"); s.State != triggers.StateQueued {
		t.Errorf("Trigger(next) = %+v", s)
	}
}

// TestScheduleClaims: a slot is claimed in the ledger before its turn is
// queued, never taken at once; a restart does not fire it again, and
// reports the slots that passed while the desk was down.
func TestScheduleClaims(t *testing.T) {
	spec, err := triggers.ParseSpec("*/5 * * * *", ist)
	if err != nil {
		t.Fatal(err)
	}
	entries := []triggers.Entry{{Name: "tape", Spec: spec, Text: "Check the tape.", RunWithin: 0}}
	dir := t.TempDir()
	clk := clock.NewFake(start)
	h := desktest.New(t, desktest.Options{Schedules: entries, Dir: dir, Clock: clk})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clk.WaitTimerAt(ctx, start.Add(5*time.Minute)); err != nil { // the schedule's first slot
		t.Fatal(err)
	}
	if _, ok := h.Ledger.Get(triggers.ArmID("tape")); !ok {
		t.Error("the new schedule was not armed in the ledger")
	}
	clk.Set(start.Add(5 * time.Minute))
	done := eventtest.Next[event.TurnCompleted](h.Events)
	id := triggers.SlotID("tape", start.Add(5*time.Minute))
	if done.Trigger != id {
		t.Errorf("turn of %s, want %s", done.Trigger, id)
	}
	if s, _ := h.Desk.Trigger(id); s.Schedule != "tape" || !s.Slot.Equal(start.Add(5*time.Minute)) || s.State != triggers.StateAnswered {
		t.Errorf("Trigger(%s) = %+v", id, s)
	}
	// A slot is never taken at once: a restart runs it, as planned work,
	// whatever the crash left of its message.
	if it, _ := h.Ledger.Get(id); it.AtOnce {
		t.Errorf("the slot's trigger was taken at once: %+v", it)
	}
	if st := h.Desk.Status(); st.NextSchedule != "tape" || !st.NextSlot.Equal(start.Add(10*time.Minute)) {
		t.Errorf("Status next = %s %v", st.NextSchedule, st.NextSlot)
	}
	h.Close()

	// Down from 10:05 to 10:17: 10:10 and 10:15 were missed (policy skip).
	clk.Set(start.Add(17 * time.Minute))
	h2 := desktest.New(t, desktest.Options{Schedules: entries, Dir: dir, Clock: clk})
	// One schedule.missed for the schedule sums them up; the ledger holds each.
	m := eventtest.Next[event.ScheduleMissed](h2.Events)
	if m.Count != 2 || !m.First.Equal(start.Add(10*time.Minute)) || !m.Last.Equal(start.Add(15*time.Minute)) ||
		!m.Slot.Equal(m.First) || !strings.Contains(m.Reason, "policy is skip") {
		t.Errorf("schedule.missed = %+v, want 2 slots from 10:10 to 10:15", m)
	}
	for _, slot := range []time.Time{start.Add(10 * time.Minute), start.Add(15 * time.Minute)} {
		if s, _ := h2.Desk.Trigger(triggers.SlotID("tape", slot)); s.State != triggers.StateMissed {
			t.Errorf("the missed slot %v is %+v in the ledger", slot, s)
		}
	}
	if err := clk.WaitTimerAt(ctx, start.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	clk.Set(start.Add(20 * time.Minute))
	done = eventtest.Next[event.TurnCompleted](h2.Events)
	if done.Trigger != triggers.SlotID("tape", start.Add(20*time.Minute)) {
		t.Errorf("after the restart, turn of %s", done.Trigger)
	}
}

// TestRollOver: a manual rollover starts a new session between turns.
func TestRollOver(t *testing.T) {
	h := desktest.New(t, desktest.Options{})
	h.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "a"})
	eventtest.Next[event.TurnCompleted](h.Events)
	before := h.Desk.Status().Session
	prev, next, err := h.Desk.RollOver(t.Context())
	if err != nil || prev != before || next == "" || next == before {
		t.Fatalf("RollOver = %s, %s, %v (session before %s)", prev, next, err, before)
	}
	ev := eventtest.NextWhere(h.Events, func(e event.SessionStarted) bool { return e.Reason == "manual_rollover" })
	if ev.Session != next || ev.Previous != before {
		t.Errorf("session.started = %+v", ev)
	}
	if st := h.Desk.Status(); st.Session != next || st.Exchanges != 0 {
		t.Errorf("Status = %+v", st)
	}
	h.Stop()
	if _, _, err := h.Desk.RollOver(t.Context()); !errors.Is(err, desk.ErrStopped) {
		t.Errorf("RollOver of a stopped desk = %v, want ErrStopped", err)
	}
}

// TestWaitTrigger: WaitTrigger returns once the trigger is answered.
func TestWaitTrigger(t *testing.T) {
	g := desktest.NewGate()
	h := desktest.New(t, desktest.Options{Model: g})
	h.Submit(triggers.Trigger{ID: "w", Kind: triggers.Manual, Text: "wait for me"})
	var wg sync.WaitGroup
	var got desk.TriggerStatus
	wg.Add(1)
	go func() { defer wg.Done(); got, _ = h.Desk.WaitTrigger(t.Context(), "w", time.Hour) }()
	g.Expect(t, "wait for me")
	g.Release()
	wg.Wait()
	if got.State != triggers.StateAnswered || got.Reply != "ok: wait for me" {
		t.Errorf("WaitTrigger = %+v", got)
	}
}

// TestTradingDayRollover: with rollover by trading day, a Saturday turn
// stays in Friday's session, and Monday's first turn opens a new one.
func TestTradingDayRollover(t *testing.T) {
	cal := &triggers.Calendar{Name: "T", Location: ist, Sessions: []triggers.Session{{Open: 9 * time.Hour, Close: 15 * time.Hour}},
		Holidays: map[string]string{"2026-03-09": "a Monday holiday"}}
	for d := time.Monday; d <= time.Friday; d++ {
		cal.Weekdays[d] = true
	}
	friday := time.Date(2026, 3, 6, 11, 0, 0, 0, ist)
	clk := clock.NewFake(friday)
	h := desktest.New(t, desktest.Options{Clock: clk, Calendar: cal, TradingDay: true})
	turn := func(id string) event.TurnCompleted {
		h.Submit(triggers.Trigger{ID: id, Kind: triggers.Manual, Text: id})
		return eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == id })
	}
	fri := turn("fri")
	for _, d := range []struct {
		id string
		at time.Time
	}{{"sat", friday.AddDate(0, 0, 1)}, {"sun", friday.AddDate(0, 0, 2)}, {"holiday-monday", friday.AddDate(0, 0, 3)}} {
		clk.Set(d.at)
		if got := turn(d.id); got.Session != fri.Session {
			t.Errorf("%s: session %s, want Friday's %s", d.id, got.Session, fri.Session)
		}
	}
	clk.Set(friday.AddDate(0, 0, 4))
	h.Submit(triggers.Trigger{ID: "tue", Kind: triggers.Manual, Text: "tue"})
	ev := eventtest.NextWhere(h.Events, func(e event.SessionStarted) bool { return e.Reason == "daily_rollover" })
	if ev.Previous != fri.Session {
		t.Errorf("session.started = %+v", ev)
	}
	if got := eventtest.Next[event.TurnCompleted](h.Events); got.Trigger != "tue" || got.Session != ev.Session {
		t.Errorf("Tuesday's turn = %+v, want it in the new session %s", got, ev.Session)
	}
}

// TestNew: a desk needs a ledger.
func TestNew(t *testing.T) {
	if _, err := desk.New(desk.Options{Name: "x"}); err == nil {
		t.Error("New without a ledger succeeded")
	}
}

// TestConfigure: new settings reach a running desk: a new schedule is
// armed and fires, a removed one no longer does, and the queue takes the
// new limit.
func TestConfigure(t *testing.T) {
	every5, err := triggers.ParseSpec("*/5 * * * *", ist)
	if err != nil {
		t.Fatal(err)
	}
	every7, err := triggers.ParseSpec("*/7 * * * *", ist)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(start)
	g := desktest.NewGate()
	h := desktest.New(t, desktest.Options{Clock: clk, Model: g, Schedules: []triggers.Entry{{Name: "five", Spec: every5, Text: "five"}}})
	if err := h.Desk.Configure(desk.Settings{
		Schedules: []triggers.Entry{{Name: "seven", Spec: every7, Text: "seven"}}, QueueLimit: 1,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for { // the new scheduler has armed "seven"
		changed := h.Ledger.Changed() // before Get: an arming between the two is not missed
		if _, ok := h.Ledger.Get(triggers.ArmID("seven")); ok {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("seven was not armed")
		}
	}
	if st := h.Desk.Status(); st.NextSchedule != "seven" || st.QueueLimit != 1 {
		t.Errorf("Status after Configure = next %s, limit %d", st.NextSchedule, st.QueueLimit)
	}
	if err := clk.WaitTimerAt(ctx, start.Add(7*time.Minute)); err != nil {
		t.Fatal(err)
	}
	clk.Set(start.Add(7 * time.Minute)) // 10:07: seven's slot; five's 10:05 is gone
	g.Expect(t, "seven")
	h.Submit(triggers.Trigger{ID: "q", Kind: triggers.Manual, Text: "queued"})
	if _, err := h.Desk.Submit(triggers.Trigger{ID: "r", Kind: triggers.Manual, Text: "over"}); !errors.Is(err, desk.ErrQueueFull) {
		t.Errorf("second queued trigger with limit 1: %v", err)
	}
	g.Release()
	g.Expect(t, "queued")
	g.Release()
	if _, ok := h.Ledger.Get(triggers.SlotID("five", start.Add(5*time.Minute))); ok {
		t.Error("the removed schedule fired")
	}
}
