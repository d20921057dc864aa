// Package desktest wires one desk for a test: a folder in t.TempDir(), its
// trigger ledger, a router over a model (the scripted one, a fake of the
// test's, or a router/routertest service's client), the keeper, the desk's
// loop, a bus and a watcher of every event on it, all on a fake clock.
//
// A desk made again with the same Options.Dir and Clock is the same desk
// after a restart. Gate is a model whose turns wait until the test lets
// them answer.
package desktest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the desk's trading day is Asia/Kolkata's, on any host

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// Name is the name of the desk this package wires.
const Name = "main"

// ShutdownTimeout is the wired desk's shutdown timeout.
const ShutdownTimeout = time.Minute

// Kolkata returns the Asia/Kolkata location, the desk's trading time zone.
func Kolkata() *time.Location {
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		panic(err) // cannot happen: time/tzdata is embedded
	}
	return loc
}

// Start is when a desk's fake clock starts unless Options.Clock says
// otherwise: Monday 2 March 2026, 10:00 IST.
func Start() time.Time { return time.Date(2026, 3, 2, 10, 0, 0, 0, Kolkata()) }

// At parses an instant written in RFC 3339, for tests that write their
// times as text (IST midnight is 18:30Z the day before); it panics on a
// malformed one, a typo in the test.
func At(rfc3339 string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, rfc3339)
	if err != nil {
		panic(err)
	}
	return t
}

// Day is the desk's trading day: dates in Asia/Kolkata, starting at
// midnight.
func Day() memory.TradingDay { return memory.TradingDay{Location: Kolkata()} }

// Options configure a wired desk. The zero Options is a started desk on
// the scripted model, in a folder of its own, on a fake clock at Start.
type Options struct {
	// Model answers the desk's model calls (the route's one model, named
	// "m"); nil is router.Scripted{}.
	Model router.Provider
	// Dir is the state folder; the desk's folder is Dir/main. Empty is a
	// new t.TempDir().
	Dir string
	// Clock is the desk's clock; nil is a new fake clock at Start.
	Clock *clock.Fake
	// QueueLimit, Coalesce, Schedules, Calendar and RefusePaused are the
	// desk's settings of those names (desk.Options).
	QueueLimit   int
	Coalesce     bool
	Schedules    []triggers.Entry
	Calendar     *triggers.Calendar
	RefusePaused bool
	// Beyond and WarnDays are the desk's beyond_calendar and
	// calendar_warn_days (desk.Options); its Day is Day().
	Beyond   triggers.Beyond
	WarnDays int
	// TradingDay rolls sessions over by the Calendar's trading days
	// (desk.TradingDayRouter) instead of by date.
	TradingDay bool
	// PauseFile keeps the desk's pause in its folder (desk.PauseFile).
	PauseFile bool
	// FS is the file layer of the desk's folder and ledger (nil: the
	// real one).
	FS durable.FS
	// StillEvery is the keeper's Options.StillEvery (zero: no reports of
	// a rollover step still running).
	StillEvery time.Duration
	// NoStart leaves the desk's loop to the test: call Start, or run
	// Desk.Run itself.
	NoStart bool
	// Space is the desk's free-space probe (desk.Options.Space); the test
	// runs it.
	Space *desk.SpaceProbe
	// SentMayBeLost is desk.Options.SentMayBeLost (a host of a cluster).
	SentMayBeLost bool
	// NoAtOnce turns desk.Options.TakeAtOnce off, as on a host of a
	// cluster (SentMayBeLost turns it off too, as deskd does).
	NoAtOnce bool
	// Export, if set, is the bus's exporter (event.Export) from before the
	// desk is made, as the NATS event publisher is.
	Export func(event.Event)
}

// Desk is one wired desk. Its fields are the parts, for the test to drive
// and inspect; everything is closed at the end of the test.
type Desk struct {
	// Desk is the desk's runtime.
	Desk *desk.Desk
	// Dir is the state folder (the desk's folder is Dir/main).
	Dir string
	// Clock is the desk's fake clock.
	Clock *clock.Fake
	// Bus is the desk's event bus.
	Bus *event.Bus
	// Events watches every event on Bus, from before the desk was made.
	Events *eventtest.Watcher
	// Folder is the desk's folder.
	Folder *memory.Folder
	// Router is the desk's router; Keeper its keeper; Ledger its ledger.
	Router *router.Router
	Keeper *keeper.Keeper
	Ledger *triggers.Ledger

	tb     testing.TB
	cancel context.CancelFunc
	done   chan error
}

// New wires a desk as Options say and, unless NoStart, starts its loop.
func New(tb testing.TB, o Options) *Desk {
	tb.Helper()
	if o.Model == nil {
		o.Model = router.Scripted{}
	}
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	if o.Clock == nil {
		o.Clock = clock.NewFake(Start())
	}
	d := &Desk{tb: tb, Dir: o.Dir, Clock: o.Clock, Bus: event.New()}
	d.Events = eventtest.WatchAll(tb, d.Bus)
	if o.Export != nil {
		tb.Cleanup(event.Export(d.Bus, o.Export))
	}
	var err error
	d.Folder, err = memory.OpenFolder(filepath.Join(o.Dir, Name), Name, d.Clock.Now)
	if err != nil {
		tb.Fatalf("desktest: %v", err)
	}
	d.Folder.FS = o.FS
	d.Router, err = router.New(router.Options{Desk: Name, Folder: d.Folder, Clock: d.Clock, Day: Day(), Bus: d.Bus,
		Settings: router.Settings{Route: []router.Model{{Name: "m", Provider: "test", Client: o.Model}}}})
	if err != nil {
		tb.Fatalf("desktest: %v", err)
	}
	var kr keeper.Router = d.Router
	if o.TradingDay {
		kr = desk.TradingDayRouter(d.Router, o.Calendar, Day(), d.Clock)
	}
	d.Keeper = keeper.New(keeper.Options{Desk: Name, Router: kr, Folder: d.Folder, Bus: d.Bus, Clock: d.Clock, Day: Day(),
		Progress: func(p keeper.Progress) { d.Desk.KeeperProgress(p) }, StillEvery: o.StillEvery})
	d.Ledger, err = triggers.OpenLedgerOn(o.FS, d.Folder.Path(triggers.LedgerFile))
	if err != nil {
		tb.Fatalf("desktest: %v", err)
	}
	var pauseFile string
	if o.PauseFile {
		pauseFile = d.Folder.Path(desk.PauseFile)
	}
	d.Desk, err = desk.New(desk.Options{
		Name: Name, Keeper: d.Keeper, Router: d.Router, Ledger: d.Ledger, Schedules: o.Schedules, Clock: d.Clock, Bus: d.Bus,
		QueueLimit: o.QueueLimit, Coalesce: o.Coalesce, Calendar: o.Calendar, ShutdownTimeout: ShutdownTimeout,
		PauseFile: pauseFile, RefusePaused: o.RefusePaused, Folder: d.Folder,
		Beyond: o.Beyond, WarnDays: o.WarnDays, Day: Day(), Space: o.Space, SentMayBeLost: o.SentMayBeLost,
		TakeAtOnce: !o.NoAtOnce && !o.SentMayBeLost,
	})
	if err != nil {
		tb.Fatalf("desktest: %v", err)
	}
	tb.Cleanup(func() {
		d.Close()
		d.Bus.Close()
	})
	if !o.NoStart {
		d.Start()
	}
	return d
}

// Start runs the desk's loop and waits until it has started.
func (d *Desk) Start() {
	d.tb.Helper()
	ctx, cancel := context.WithCancel(d.tb.Context())
	d.cancel, d.done = cancel, make(chan error, 1)
	go func() { d.done <- d.Desk.Run(ctx) }()
	deadline := time.NewTimer(eventtest.Timeout)
	defer deadline.Stop()
	select {
	case <-d.Desk.Started():
	case err := <-d.done:
		d.tb.Fatalf("desktest: the desk stopped at start: %v", err)
	case <-deadline.C:
		d.tb.Fatalf("desktest: the desk did not start within %v", eventtest.Timeout)
	}
}

// Cancel tells the desk's loop to stop and returns at once. Run's result
// is then the test's to read from Done; Stop no longer waits for it.
func (d *Desk) Cancel() {
	if d.cancel != nil {
		d.cancel()
		d.cancel = nil
	}
}

// Done returns the channel that carries Run's result once the loop ends.
func (d *Desk) Done() <-chan error { return d.done }

// Stop tells the desk's loop to stop and waits until Run returns, moving
// the fake clock on past the shutdown timeout so that a running turn is
// cut off. It fails the test if Run returns an error.
func (d *Desk) Stop() {
	d.tb.Helper()
	if d.cancel == nil {
		return
	}
	d.Cancel()
	for {
		select {
		case err := <-d.done:
			if err != nil {
				d.tb.Errorf("desktest: Run: %v", err)
			}
			return
		case <-time.After(10 * time.Millisecond): // a running turn waits for the timeout
			d.Clock.Advance(ShutdownTimeout)
		}
	}
}

// Close stops the desk and closes its router and ledger, as the process
// does when it exits; a desk made again on Dir starts from what is on
// disk. It may be called more than once.
func (d *Desk) Close() {
	d.tb.Helper()
	d.Stop()
	_ = d.Router.Close()
	_ = d.Ledger.Close()
}

// Submit submits tr to the desk and fails the test if it is refused.
func (d *Desk) Submit(tr triggers.Trigger) desk.Accepted {
	d.tb.Helper()
	a, err := d.Desk.Submit(tr)
	if err != nil {
		d.tb.Fatalf("Submit(%s): %v", tr.ID, err)
	}
	return a
}

// Gate is a model whose turns wait until the test lets them answer: each
// turn's last message is sent on Calls, and the turn answers "ok: " and
// that message's first line once Release is called (or fails when its
// context ends). Other tasks (summaries, folds) answer as the scripted
// model does, at once.
type Gate struct {
	calls   chan string
	release chan struct{}
}

var _ router.Provider = (*Gate)(nil)

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{calls: make(chan string, 100), release: make(chan struct{}, 100)}
}

// Complete waits for Release on a turn; see Gate.
func (g *Gate) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task != router.TaskTurn {
		return router.Scripted{}.Complete(ctx, req)
	}
	last := req.Messages[len(req.Messages)-1].Text
	g.calls <- last
	select {
	case <-g.release:
		first, _, _ := strings.Cut(last, "\n")
		return router.Response{Text: "ok: " + first}, nil
	case <-ctx.Done():
		return router.Response{}, ctx.Err()
	}
}

// Calls carries the last message of each turn that reached the gate.
func (g *Gate) Calls() <-chan string { return g.calls }

// Release lets one waiting (or the next) turn answer.
func (g *Gate) Release() { g.release <- struct{}{} }

// Expect waits for the next turn to reach the gate and fails tb unless its
// message contains want; it returns the message.
func (g *Gate) Expect(tb testing.TB, want string) string {
	tb.Helper()
	deadline := time.NewTimer(eventtest.Timeout)
	defer deadline.Stop()
	select {
	case got := <-g.calls:
		if !strings.Contains(got, want) {
			tb.Errorf("the model got %q, want it to contain %q", got, want)
		}
		return got
	case <-deadline.C:
		tb.Fatalf("the model got no call within %v, want %q", eventtest.Timeout, want)
		return ""
	}
}

// ExpectNoCall fails tb if a turn has reached the gate that Expect has not
// taken. Call it after a barrier (synctest.Wait, or a later event).
func (g *Gate) ExpectNoCall(tb testing.TB, why string) {
	tb.Helper()
	select {
	case got := <-g.calls:
		tb.Errorf("%s: the model was called with %q", why, got)
	default:
	}
}
