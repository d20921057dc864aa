package desk_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// The real keeper and router are what a desk takes.
var (
	_ desk.Keeper = (*keeper.Keeper)(nil)
	_ desk.Router = (*router.Router)(nil)
)

// fakeKeeper is a keeper that never rolls over: Prepare marks the
// trigger's text, or fails with prepareErr.
type fakeKeeper struct {
	clk        clock.Clock
	prepareErr error
	// prepared, when set, is sent each trigger Prepare takes, and
	// Prepare then waits for its context to end.
	prepared chan string
}

func (k *fakeKeeper) Start(ctx context.Context) error { return nil }

func (k *fakeKeeper) Prepare(ctx context.Context, t triggers.Trigger) (triggers.Trigger, error) {
	if k.prepareErr != nil {
		return t, k.prepareErr
	}
	if k.prepared != nil {
		k.prepared <- t.ID
		<-ctx.Done()
		return t, ctx.Err()
	}
	t.Text = "[prepared] " + t.Text
	return t, nil
}

func (k *fakeKeeper) RollOver(ctx context.Context, reason event.SessionReason) (string, error) {
	return "", errors.New("fakeKeeper: no rollover")
}

func (k *fakeKeeper) Due() bool { return false }

func (k *fakeKeeper) NextBoundary() time.Time { return k.clk.Now().Add(24 * time.Hour) }

// fakeRouter is one session, s1, whose turns fail with sendErr and are
// recorded on sent.
type fakeRouter struct {
	sendErr error
	sent    chan triggers.Trigger

	mu        sync.Mutex
	exchanges int
	spend     router.Spend
}

func (r *fakeRouter) SessionID() string { return "s1" }

func (r *fakeRouter) TradingDate() (memory.Date, bool) {
	return memory.Date{Year: 2026, Month: 3, Day: 2}, true
}

func (r *fakeRouter) Exchanges() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exchanges
}

func (r *fakeRouter) Primary() router.Model { return router.Model{Name: "fake", Provider: "test"} }

func (r *fakeRouter) Spend() router.Spend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spend
}

func (r *fakeRouter) Send(ctx context.Context, t triggers.Trigger) (router.Reply, error) {
	r.sent <- t
	if r.sendErr != nil {
		return router.Reply{}, r.sendErr
	}
	r.mu.Lock()
	r.exchanges++
	n := r.exchanges
	r.mu.Unlock()
	return router.Reply{Session: "s1", Turn: n, Text: "done", Model: "fake", Provider: "test"}, nil
}

// Turn is Send, begun first (o.Begin); it reports the request gone out
// (o.Sent) before it records the trigger on sent, as a model's request
// goes out before it is answered.
func (r *fakeRouter) Turn(ctx context.Context, t triggers.Trigger, o router.TurnOptions) (router.Reply, error) {
	if o.Begin != nil {
		if err := o.Begin(); err != nil {
			return router.Reply{}, fmt.Errorf("%w: %w", router.ErrNotBegun, err)
		}
	}
	if o.Sent != nil {
		o.Sent()
	}
	return r.Send(ctx, t)
}

func (r *fakeRouter) Fork(ctx context.Context) (string, error) {
	return "", errors.New("fakeRouter: no fork")
}

func (r *fakeRouter) Configure(s router.Settings) error { return nil }

func (r *fakeRouter) Outcomes(session string, triggers []string) (map[string]router.Outcome, error) {
	return map[string]router.Outcome{}, nil
}

func (r *fakeRouter) Unreadable() []router.Unreadable { return nil }

// runFake runs a desk on k and r, with a ledger in a temporary folder,
// and returns it with its events.
func runFake(t *testing.T, k *fakeKeeper, r *fakeRouter) (*desk.Desk, <-chan event.Event) {
	t.Helper()
	clk := clock.NewFake(start)
	k.clk = clk
	bus := event.New()
	events := make(chan event.Event, 1000)
	cancelSub := event.SubscribeAll(bus, func(e event.Event) { events <- e })
	ledger, err := triggers.OpenLedger(filepath.Join(t.TempDir(), triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	d, err := desk.New(desk.Options{Name: "main", Keeper: k, Router: r, Ledger: ledger, Clock: clk, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of its cancel")
		}
		cancelSub()
		bus.Close()
		_ = ledger.Close()
	})
	select {
	case <-d.Started():
	case err := <-done:
		t.Fatalf("desk stopped at start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("desk did not start within 10s")
	}
	return d, events
}

// nextOf returns the first event of type E on events, failing the test
// after 10s.
func nextOf[E event.Event](t *testing.T, events <-chan event.Event) E {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if x, ok := e.(E); ok {
				return x
			}
		case <-deadline:
			var zero E
			t.Fatalf("no %s event within 10s", zero.Topic())
			return zero
		}
	}
}

// TestFakeRouterTurnFails: a turn the router fails is recorded failed
// after it reached the model, announced as turn.failed with the router's
// error, and leaves the desk idle; the router got the keeper's prepared
// trigger.
func TestFakeRouterTurnFails(t *testing.T) {
	r := &fakeRouter{sendErr: errors.New("model down"), sent: make(chan triggers.Trigger, 10)}
	d, events := runFake(t, &fakeKeeper{}, r)
	acc, err := d.Submit(triggers.Trigger{ID: "t1", Kind: triggers.Manual, Text: "Good morning"})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	failed := nextOf[event.TurnFailed](t, events)
	if failed.Trigger != acc.ID || failed.Session != "s1" || failed.Turn != 1 || failed.Error != "model down" {
		t.Errorf("turn.failed = %+v, want trigger t1, session s1, turn 1, error model down", failed)
	}
	select {
	case got := <-r.sent:
		if got.ID != "t1" || got.Text != "[prepared] "+triggers.Prompt(triggers.Trigger{Kind: triggers.Manual, Text: "Good morning"}) {
			t.Errorf("the router was sent %+v, want the keeper's prepared trigger", got)
		}
	default:
		t.Error("the router was sent nothing")
	}
	s, ok := d.WaitTrigger(t.Context(), "t1", time.Minute)
	if !ok || s.State != triggers.StateFailed || s.Reason != "model down" || !s.ModelCalled || s.Session != "s1" || s.Turn != 1 {
		t.Errorf("Trigger(t1) = %+v, want failed after the model was called", s)
	}
	if st := d.Status(); st.State != desk.StateIdle || st.Running != nil || st.Model != "fake" {
		t.Errorf("Status = state %s, running %+v, model %s; want idle, none, fake", st.State, st.Running, st.Model)
	}
}

// TestFakeKeeperPrepareFails: a trigger the keeper cannot prepare fails
// before the model: the router is sent nothing.
func TestFakeKeeperPrepareFails(t *testing.T) {
	r := &fakeRouter{sent: make(chan triggers.Trigger, 10)}
	d, events := runFake(t, &fakeKeeper{prepareErr: errors.New("rollover failed")}, r)
	if _, err := d.Submit(triggers.Trigger{ID: "t1", Kind: triggers.Market, Text: "RELIANCE opens"}); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	failed := nextOf[event.TurnFailed](t, events)
	if failed.Trigger != "t1" || failed.Error != "rollover failed" {
		t.Errorf("turn.failed = %+v, want trigger t1, error rollover failed", failed)
	}
	s, ok := d.WaitTrigger(t.Context(), "t1", time.Minute)
	if !ok || s.State != triggers.StateFailed || s.ModelCalled {
		t.Errorf("Trigger(t1) = %+v, want failed before the model was called", s)
	}
	select {
	case got := <-r.sent:
		t.Errorf("the router was sent %+v after the keeper failed", got)
	default:
	}
}
