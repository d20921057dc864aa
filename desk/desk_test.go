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
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

var (
	ist = mustLoad("Asia/Kolkata")
	// start is Monday 2 March 2026, 10:00 IST.
	start = time.Date(2026, 3, 2, 10, 0, 0, 0, ist)
	day   = memory.TradingDay{Location: ist}
)

func mustLoad(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

// gateModel is a model whose turns wait until the test lets them answer.
// Each turn's last message is sent on calls first.
type gateModel struct {
	calls   chan string
	release chan struct{}
}

func newGate() *gateModel {
	return &gateModel{calls: make(chan string, 100), release: make(chan struct{}, 100)}
}

func (g *gateModel) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task != router.TaskTurn {
		return router.Scripted{}.Complete(ctx, req)
	}
	last := req.Messages[len(req.Messages)-1].Text
	g.calls <- last
	select {
	case <-g.release:
		return router.Response{Text: "ok: " + firstLine(last)}, nil
	case <-ctx.Done():
		return router.Response{}, ctx.Err()
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// harness is one desk over a temporary folder, its events on a channel.
type harness struct {
	t      *testing.T
	dir    string
	clk    *clock.Fake
	bus    *event.Bus
	events chan event.Event
	ledger *triggers.Ledger
	desk   *desk.Desk
	router *router.Router
	cancel context.CancelFunc
	done   chan error
}

type deskOptions struct {
	model      router.Provider
	limit      int
	coalesce   bool
	schedules  []triggers.Entry
	dir        string
	clk        *clock.Fake
	noStart    bool
	calendar   *triggers.Calendar
	tradingDay bool
	// pauseFile keeps the desk's pause in its folder; refuse refuses
	// triggers while paused.
	pauseFile bool
	refuse    bool
	// fsys, if set, is the file layer of the desk's folder and ledger.
	fsys durable.FS
}

func newHarness(t *testing.T, o deskOptions) *harness {
	t.Helper()
	if o.model == nil {
		o.model = router.Scripted{}
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.clk == nil {
		o.clk = clock.NewFake(start)
	}
	h := &harness{t: t, dir: o.dir, clk: o.clk, bus: event.New(), events: make(chan event.Event, 10000)}
	cancelSub := event.SubscribeAll(h.bus, func(e event.Event) { h.events <- e })
	folder, err := memory.OpenFolder(filepath.Join(o.dir, "main"), "main", h.clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	folder.FS = o.fsys
	h.router, err = router.New(router.Options{Desk: "main", Folder: folder, Clock: h.clk, Day: day, Bus: h.bus,
		Settings: router.Settings{Route: []router.Model{{Name: "m", Provider: "test", Client: o.model}}}})
	if err != nil {
		t.Fatal(err)
	}
	var kr keeper.Router = h.router
	if o.tradingDay {
		kr = desk.TradingDayRouter(h.router, o.calendar, day, h.clk)
	}
	k := keeper.New(keeper.Options{Desk: "main", Router: kr, Folder: folder, Bus: h.bus, Clock: h.clk, Day: day})
	h.ledger, err = triggers.OpenLedgerOn(o.fsys, folder.Path(triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	var pauseFile string
	if o.pauseFile {
		pauseFile = folder.Path(desk.PauseFile)
	}
	h.desk, err = desk.New(desk.Options{
		Name: "main", Keeper: k, Router: h.router, Ledger: h.ledger, Schedules: o.schedules, Clock: h.clk, Bus: h.bus,
		QueueLimit: o.limit, Coalesce: o.coalesce, Calendar: o.calendar, ShutdownTimeout: time.Minute,
		PauseFile: pauseFile, RefusePaused: o.refuse,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.stop()
		cancelSub()
		h.bus.Close()
		_ = h.router.Close()
		_ = h.ledger.Close()
	})
	if !o.noStart {
		h.start()
	}
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(h.t.Context())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.desk.Run(ctx) }()
	select {
	case <-h.desk.Started():
	case err := <-h.done:
		h.t.Fatalf("desk stopped at start: %v", err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("desk did not start within 10s")
	}
}

// stop cancels Run and waits for it (a running turn is cut off by
// advancing the fake clock past the shutdown timeout).
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	for {
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
			h.clk.Advance(time.Minute)
		}
	}
}

// waitFor returns the first event of type E that ok accepts, failing the
// test after 10s.
func waitFor[E event.Event](h *harness, ok func(E) bool) E {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-h.events:
			if x, is := e.(E); is && (ok == nil || ok(x)) {
				return x
			}
		case <-deadline:
			var zero E
			h.t.Fatalf("no %s event within 10s", zero.Topic())
			return zero
		}
	}
}

func (h *harness) submit(tr triggers.Trigger) desk.Accepted {
	h.t.Helper()
	a, err := h.desk.Submit(tr)
	if err != nil {
		h.t.Fatalf("Submit(%s): %v", tr.ID, err)
	}
	return a
}

func (h *harness) expectCall(g *gateModel, want string) {
	h.t.Helper()
	select {
	case got := <-g.calls:
		if !strings.Contains(got, want) {
			h.t.Errorf("the model got %q, want it to contain %q", got, want)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("the model got no call within 10s, want %q", want)
	}
}

// TestTurnEndToEnd: a trigger is recorded, run, answered, and its outcome
// is readable from the ledger.
func TestTurnEndToEnd(t *testing.T) {
	h := newHarness(t, deskOptions{})
	a := h.submit(triggers.Trigger{ID: "hello", Kind: triggers.Manual, Text: "Good morning"})
	if a.ID != "hello" || a.Duplicate || a.State != triggers.StateQueued {
		t.Errorf("Submit = %+v", a)
	}
	waitFor[event.TriggerQueued](h, func(e event.TriggerQueued) bool { return e.Trigger == "hello" })
	done := waitFor[event.TurnCompleted](h, func(e event.TurnCompleted) bool { return e.Trigger == "hello" })
	s, ok := h.desk.Trigger("hello")
	if !ok || s.State != triggers.StateAnswered || s.Session != done.Session || s.Turn != 1 || !s.ModelCalled ||
		!strings.Contains(s.Reply, "Good morning") || s.Text != "Good morning" {
		t.Errorf("Trigger(hello) = %+v", s)
	}
	if _, ok := h.desk.Trigger("nope"); ok {
		t.Error("Trigger(nope) found")
	}
	if a := h.submit(triggers.Trigger{Kind: triggers.Market, Text: "no id"}); !strings.HasPrefix(a.ID, "t-") {
		t.Errorf("a trigger without id got %q", a.ID)
	}
}

// TestDuplicate: the same id twice is queued once.
func TestDuplicate(t *testing.T) {
	g := newGate()
	h := newHarness(t, deskOptions{model: g})
	h.submit(triggers.Trigger{ID: "x", Kind: triggers.Market, Text: "first"})
	h.expectCall(g, "first")
	a := h.submit(triggers.Trigger{ID: "x", Kind: triggers.Market, Text: "again"})
	if !a.Duplicate || a.State != triggers.StateSent {
		t.Errorf("second Submit = %+v, want a duplicate in state sent", a)
	}
	g.release <- struct{}{}
	waitFor[event.TurnCompleted](h, nil)
	if a := h.submit(triggers.Trigger{ID: "x", Kind: triggers.Market, Text: "third"}); !a.Duplicate || a.State != triggers.StateAnswered {
		t.Errorf("third Submit = %+v, want a duplicate, answered", a)
	}
	if n := h.desk.Status().QueueDepth; n != 0 {
		t.Errorf("queue depth %d, want 0", n)
	}
}

// TestPrioritiesAndOverflow: while a turn runs, queued triggers wait in
// priority order; a full queue refuses and announces the drop.
func TestPrioritiesAndOverflow(t *testing.T) {
	g := newGate()
	h := newHarness(t, deskOptions{model: g, limit: 3})
	h.submit(triggers.Trigger{ID: "busy", Kind: triggers.Market, Text: "busy"})
	h.expectCall(g, "busy")
	h.submit(triggers.Trigger{ID: "sched", Kind: triggers.Schedule, Text: "scheduled"})
	h.submit(triggers.Trigger{ID: "mkt", Kind: triggers.Market, Text: "market"})
	h.submit(triggers.Trigger{ID: "man", Kind: triggers.Manual, Text: "manual"})
	_, err := h.desk.Submit(triggers.Trigger{ID: "over", Kind: triggers.Manual, Text: "one too many"})
	if !errors.Is(err, desk.ErrQueueFull) {
		t.Fatalf("Submit to a full queue = %v, want ErrQueueFull", err)
	}
	drop := waitFor[event.TriggerDropped](h, nil)
	if drop.Trigger != "over" || !strings.Contains(drop.Reason, "queue full") {
		t.Errorf("trigger.dropped = %+v", drop)
	}
	if _, ok := h.desk.Trigger("over"); ok {
		t.Error("the refused trigger is in the ledger: a retry with its id would be taken for a duplicate")
	}
	st := h.desk.Status()
	if st.QueueDepth != 3 || st.QueueLimit != 3 || st.Running == nil || st.Running.Trigger != "busy" || st.Running.Phase != "model" || st.State != "running" {
		t.Errorf("Status = %+v", st)
	}
	for _, want := range []string{"manual", "market", "scheduled"} {
		g.release <- struct{}{}
		h.expectCall(g, want)
	}
	g.release <- struct{}{}
}

// TestCoalesce: with coalescing, market triggers of one key fold into the
// newest while queued; its turn says how many it replaced, and each
// replaced trigger reports the newest one's answer.
func TestCoalesce(t *testing.T) {
	g := newGate()
	h := newHarness(t, deskOptions{model: g, coalesce: true})
	h.submit(triggers.Trigger{ID: "busy", Kind: triggers.Manual, Text: "busy"})
	h.expectCall(g, "busy")
	h.submit(triggers.Trigger{ID: "n1", Kind: triggers.Market, Key: "NIFTY", Text: "NIFTY 22000"})
	h.submit(triggers.Trigger{ID: "b1", Kind: triggers.Market, Key: "BANKNIFTY", Text: "BANKNIFTY 48000"})
	h.submit(triggers.Trigger{ID: "n2", Kind: triggers.Market, Key: "NIFTY", Text: "NIFTY 22050"})
	a := h.submit(triggers.Trigger{ID: "n3", Kind: triggers.Market, Key: "NIFTY", Text: "NIFTY 22100"})
	if a.Replaced != "n2" {
		t.Errorf("n3 replaced %q, want n2", a.Replaced)
	}
	q := waitFor[event.TriggerQueued](h, func(e event.TriggerQueued) bool { return e.Trigger == "n3" })
	if q.Replaced != "n2" || q.Merged != 2 {
		t.Errorf("trigger.queued of n3 = %+v", q)
	}
	if n := h.desk.Status().QueueDepth; n != 2 {
		t.Errorf("queue depth %d, want 2", n)
	}
	if s, _ := h.desk.Trigger("n1"); s.State != triggers.StateQueued || s.MergedInto != "n3" {
		t.Errorf("Trigger(n1) = %+v, want queued, merged into n3", s)
	}
	g.release <- struct{}{}
	select {
	case got := <-g.calls:
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
	g.release <- struct{}{}
	h.expectCall(g, "BANKNIFTY 48000")
	g.release <- struct{}{}
	waitFor[event.TurnCompleted](h, func(e event.TurnCompleted) bool { return e.Trigger == "b1" })
	s, _ := h.desk.Trigger("n1")
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

	g := newGate()
	h := newHarness(t, deskOptions{model: g, dir: dir})
	in := waitFor[event.TurnInterrupted](h, nil)
	if in.Trigger != "sent" || in.Session != "s0" || !strings.Contains(in.Reason, "not run again") {
		t.Errorf("turn.interrupted = %+v", in)
	}
	for _, want := range []string{"text of q1", "text of run", "text of q2"} {
		h.expectCall(g, want)
		g.release <- struct{}{}
	}
	waitFor[event.TurnCompleted](h, func(e event.TurnCompleted) bool { return e.Trigger == "q2" })
	select {
	case got := <-g.calls:
		t.Errorf("an unexpected model call: %q", got)
	default:
	}
	st := h.desk.Status()
	if len(st.Interrupted) != 1 || st.Interrupted[0].ID != "sent" || st.Interrupted[0].State != triggers.StateInterrupted {
		t.Errorf("Status.Interrupted = %+v", st.Interrupted)
	}
	if s, _ := h.desk.Trigger("run"); s.State != triggers.StateAnswered {
		t.Errorf("Trigger(run) = %+v", s)
	}
}

// TestShutdownInterrupts: a turn still with the model when the shutdown
// timeout passes is cut off and recorded interrupted; one queued behind it
// stays queued for the next start.
func TestShutdownInterrupts(t *testing.T) {
	g := newGate()
	dir := t.TempDir()
	h := newHarness(t, deskOptions{model: g, dir: dir})
	h.submit(triggers.Trigger{ID: "long", Kind: triggers.Manual, Text: "long"})
	h.expectCall(g, "long")
	h.submit(triggers.Trigger{ID: "next", Kind: triggers.Manual, Text: "next"})
	h.stop()
	in := waitFor[event.TurnInterrupted](h, nil)
	if in.Trigger != "long" || !strings.Contains(in.Reason, "shutdown timeout") {
		t.Errorf("turn.interrupted = %+v", in)
	}
	if s, _ := h.desk.Trigger("long"); s.State != triggers.StateInterrupted {
		t.Errorf("Trigger(long) = %+v", s)
	}
	if s, _ := h.desk.Trigger("next"); s.State != triggers.StateQueued {
		t.Errorf("Trigger(next) = %+v", s)
	}
}

// TestScheduleClaims: a slot is claimed in the ledger before its turn is
// queued; a restart does not fire it again, and reports the slots that
// passed while the desk was down.
func TestScheduleClaims(t *testing.T) {
	spec, err := triggers.ParseSpec("*/5 * * * *", ist)
	if err != nil {
		t.Fatal(err)
	}
	entries := []triggers.Entry{{Name: "tape", Spec: spec, Text: "Check the tape.", RunWithin: 0}}
	dir := t.TempDir()
	clk := clock.NewFake(start)
	h := newHarness(t, deskOptions{schedules: entries, dir: dir, clk: clk})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clk.WaitPending(ctx, 2); err != nil { // the day boundary and the schedule
		t.Fatal(err)
	}
	if _, ok := h.ledger.Get(triggers.ArmID("tape")); !ok {
		t.Error("the new schedule was not armed in the ledger")
	}
	clk.Set(start.Add(5 * time.Minute))
	done := waitFor[event.TurnCompleted](h, nil)
	id := triggers.SlotID("tape", start.Add(5*time.Minute))
	if done.Trigger != id {
		t.Errorf("turn of %s, want %s", done.Trigger, id)
	}
	if s, _ := h.desk.Trigger(id); s.Schedule != "tape" || !s.Slot.Equal(start.Add(5*time.Minute)) || s.State != triggers.StateAnswered {
		t.Errorf("Trigger(%s) = %+v", id, s)
	}
	if st := h.desk.Status(); st.NextSchedule != "tape" || !st.NextSlot.Equal(start.Add(10*time.Minute)) {
		t.Errorf("Status next = %s %v", st.NextSchedule, st.NextSlot)
	}
	h.stop()
	_ = h.router.Close()
	_ = h.ledger.Close()

	// Down from 10:05 to 10:17: 10:10 and 10:15 were missed (policy skip).
	clk.Set(start.Add(17 * time.Minute))
	h2 := newHarness(t, deskOptions{schedules: entries, dir: dir, clk: clk})
	for _, slot := range []time.Time{start.Add(10 * time.Minute), start.Add(15 * time.Minute)} {
		m := waitFor[event.ScheduleMissed](h2, nil)
		if !m.Slot.Equal(slot) || !strings.Contains(m.Reason, "policy is skip") {
			t.Errorf("schedule.missed = %+v, want slot %v", m, slot)
		}
		if s, _ := h2.desk.Trigger(triggers.SlotID("tape", slot)); s.State != triggers.StateMissed {
			t.Errorf("the missed slot %v is %+v in the ledger", slot, s)
		}
	}
	if err := clk.WaitPending(ctx, 2); err != nil {
		t.Fatal(err)
	}
	clk.Set(start.Add(20 * time.Minute))
	done = waitFor[event.TurnCompleted](h2, nil)
	if done.Trigger != triggers.SlotID("tape", start.Add(20*time.Minute)) {
		t.Errorf("after the restart, turn of %s", done.Trigger)
	}
}

// TestRollOver: a manual rollover starts a new session between turns.
func TestRollOver(t *testing.T) {
	h := newHarness(t, deskOptions{})
	h.submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "a"})
	waitFor[event.TurnCompleted](h, nil)
	before := h.desk.Status().Session
	prev, next, err := h.desk.RollOver(t.Context())
	if err != nil || prev != before || next == "" || next == before {
		t.Fatalf("RollOver = %s, %s, %v (session before %s)", prev, next, err, before)
	}
	ev := waitFor[event.SessionStarted](h, func(e event.SessionStarted) bool { return e.Reason == "manual_rollover" })
	if ev.Session != next || ev.Previous != before {
		t.Errorf("session.started = %+v", ev)
	}
	if st := h.desk.Status(); st.Session != next || st.Exchanges != 0 {
		t.Errorf("Status = %+v", st)
	}
	h.stop()
	if _, _, err := h.desk.RollOver(t.Context()); !errors.Is(err, desk.ErrStopped) {
		t.Errorf("RollOver of a stopped desk = %v, want ErrStopped", err)
	}
}

// TestWaitTrigger: WaitTrigger returns once the trigger is answered.
func TestWaitTrigger(t *testing.T) {
	g := newGate()
	h := newHarness(t, deskOptions{model: g})
	h.submit(triggers.Trigger{ID: "w", Kind: triggers.Manual, Text: "wait for me"})
	var wg sync.WaitGroup
	var got desk.TriggerStatus
	wg.Add(1)
	go func() { defer wg.Done(); got, _ = h.desk.WaitTrigger(t.Context(), "w", time.Hour) }()
	h.expectCall(g, "wait for me")
	g.release <- struct{}{}
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
	h := newHarness(t, deskOptions{clk: clk, calendar: cal, tradingDay: true})
	turn := func(id string) event.TurnCompleted {
		h.submit(triggers.Trigger{ID: id, Kind: triggers.Manual, Text: id})
		return waitFor[event.TurnCompleted](h, func(e event.TurnCompleted) bool { return e.Trigger == id })
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
	h.submit(triggers.Trigger{ID: "tue", Kind: triggers.Manual, Text: "tue"})
	ev := waitFor[event.SessionStarted](h, func(e event.SessionStarted) bool { return e.Reason == "daily_rollover" })
	if ev.Previous != fri.Session {
		t.Errorf("session.started = %+v", ev)
	}
	if got := waitFor[event.TurnCompleted](h, nil); got.Trigger != "tue" || got.Session != ev.Session {
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
	g := newGate()
	h := newHarness(t, deskOptions{clk: clk, model: g, schedules: []triggers.Entry{{Name: "five", Spec: every5, Text: "five"}}})
	if err := h.desk.Configure(desk.Settings{
		Schedules: []triggers.Entry{{Name: "seven", Spec: every7, Text: "seven"}}, QueueLimit: 1,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for { // the new scheduler has armed "seven"
		changed := h.ledger.Changed() // before Get: an arming between the two is not missed
		if _, ok := h.ledger.Get(triggers.ArmID("seven")); ok {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("seven was not armed")
		}
	}
	if st := h.desk.Status(); st.NextSchedule != "seven" || st.QueueLimit != 1 {
		t.Errorf("Status after Configure = next %s, limit %d", st.NextSchedule, st.QueueLimit)
	}
	if err := clk.WaitPending(ctx, 2); err != nil {
		t.Fatal(err)
	}
	clk.Set(start.Add(7 * time.Minute)) // 10:07: seven's slot; five's 10:05 is gone
	h.expectCall(g, "seven")
	h.submit(triggers.Trigger{ID: "q", Kind: triggers.Manual, Text: "queued"})
	if _, err := h.desk.Submit(triggers.Trigger{ID: "r", Kind: triggers.Manual, Text: "over"}); !errors.Is(err, desk.ErrQueueFull) {
		t.Errorf("second queued trigger with limit 1: %v", err)
	}
	g.release <- struct{}{}
	h.expectCall(g, "queued")
	g.release <- struct{}{}
	if _, ok := h.ledger.Get(triggers.SlotID("five", start.Add(5*time.Minute))); ok {
		t.Error("the removed schedule fired")
	}
}
