package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/router"
)

var start = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

const within = 2 * time.Minute

// fixture is a queue on a fake clock, with watchers of its events.
type fixture struct {
	t         *testing.T
	clock     *clock.Fake
	bus       *event.Bus
	q         *approval.Queue
	requested *eventtest.Watcher
	decided   *eventtest.Watcher
	gates     sync.WaitGroup // the gates call runs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	bus := event.New()
	t.Cleanup(bus.Close)
	f := &fixture{
		t:         t,
		clock:     clock.NewFake(start),
		bus:       bus,
		requested: eventtest.Watch[event.ApprovalRequested](t, bus),
		decided:   eventtest.Watch[event.ApprovalDecided](t, bus),
	}
	f.q = approval.New(approval.Options{Clock: f.clock, Bus: bus})
	t.Cleanup(func() {
		f.q.Close() // every gate still waiting returns
		f.gates.Wait()
	})
	return f
}

func placeOrder(desk, id string) router.GateCall {
	return router.GateCall{
		Desk: desk, Session: "s1", Trigger: "t1", ID: id,
		Tool:      "mcp__broker__place_order",
		Arguments: json.RawMessage(`{"symbol":"INFY","qty":10,"side":"buy"}`),
	}
}

// call runs gate on c in a goroutine of its own; the verdict comes on the
// channel. The fixture's cleanup closes the queue, so that every gate
// returns, and waits for them.
func (f *fixture) call(ctx context.Context, gate router.Gate, c router.GateCall) <-chan router.Verdict {
	out := make(chan router.Verdict, 1)
	f.gates.Go(func() { out <- gate(ctx, c) })
	return out
}

// request makes desk's call wait and returns its announcement.
func (f *fixture) request(desk, id string) (event.ApprovalRequested, <-chan router.Verdict) {
	f.t.Helper()
	v := f.call(f.t.Context(), f.q.Gate(within, nil), placeOrder(desk, id))
	r := eventtest.NextWhere(f.requested, func(e event.ApprovalRequested) bool { return e.Desk == desk && e.Call == id })
	return r, v
}

func verdict(t *testing.T, ch <-chan router.Verdict) router.Verdict {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(eventtest.Timeout):
		t.Fatal("the gate did not return")
		return router.Verdict{}
	}
}

func TestGranted(t *testing.T) {
	f := newFixture(t)
	r, ch := f.request("alpha", "call-1")
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(r.ID) {
		t.Errorf("approval id %q, want 8 lowercase hex digits", r.ID)
	}
	if r.Tool != "mcp__broker__place_order" || r.Trigger != "t1" || string(r.Arguments) != `{"symbol":"INFY","qty":10,"side":"buy"}` {
		t.Errorf("approval.requested = %+v, want the call's tool, trigger and arguments", r)
	}
	if !r.ExpiresAt.Equal(start.Add(within)) || !r.At.Equal(start) {
		t.Errorf("approval.requested at %v expires %v, want %v and %v", r.At, r.ExpiresAt, start, start.Add(within))
	}
	select {
	case v := <-ch:
		t.Fatalf("the gate answered %+v before any decision", v)
	default:
	}

	f.clock.Advance(15 * time.Second)
	d, err := f.q.Decide("alpha", r.ID, true, "alice", "ok")
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	v := verdict(t, ch)
	if !v.Run || v.Decision == nil {
		t.Fatalf("verdict %+v, want Run with a decision", v)
	}
	want := router.Decision{
		ID: r.ID, Call: "call-1", Tool: "mcp__broker__place_order", Arguments: r.Arguments,
		Outcome: router.DecisionApproved, By: "alice", Reason: "ok",
		RequestedAt: start, DecidedAt: start.Add(15 * time.Second),
	}
	for name, got := range map[string]router.Decision{"Decide": d, "verdict": *v.Decision} {
		if !sameDecision(got, want) {
			t.Errorf("%s's decision = %+v, want %+v", name, got, want)
		}
	}
	e := eventtest.Next[event.ApprovalDecided](f.decided)
	if e.ID != r.ID || e.Desk != "alpha" || e.Outcome != "approved" || e.By != "alice" || e.Reason != "ok" || e.WaitedMS != 15000 || e.Call != "call-1" || e.Tool != want.Tool {
		t.Errorf("approval.decided = %+v, want approved by alice after 15000 ms", e)
	}
	if p := f.q.Pending(""); len(p) != 0 {
		t.Errorf("Pending after the decision = %+v, want none", p)
	}
}

func sameDecision(a, b router.Decision) bool {
	return a.ID == b.ID && a.Call == b.Call && a.Tool == b.Tool && string(a.Arguments) == string(b.Arguments) &&
		a.Outcome == b.Outcome && a.By == b.By && a.Reason == b.Reason &&
		a.RequestedAt.Equal(b.RequestedAt) && a.DecidedAt.Equal(b.DecidedAt)
}

func TestDenied(t *testing.T) {
	tests := []struct {
		name, reason, result string
	}{
		{"with a reason", "too big", "denied by bob: too big. The call did not run; do not retry it unless the operator asks."},
		{"without", "", "denied by bob. The call did not run; do not retry it unless the operator asks."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			r, ch := f.request("alpha", "call-1")
			if _, err := f.q.Decide("alpha", r.ID, false, "bob", tt.reason); err != nil {
				t.Fatalf("Decide: %v", err)
			}
			v := verdict(t, ch)
			if v.Run || v.Outcome != router.OutcomeDenied || v.Result != tt.result {
				t.Errorf("verdict %+v, want denied with %q", v, tt.result)
			}
			if v.Decision == nil || v.Decision.Outcome != router.DecisionDenied || v.Decision.By != "bob" || v.Decision.Reason != tt.reason {
				t.Errorf("decision %+v, want denied by bob", v.Decision)
			}
			e := eventtest.Next[event.ApprovalDecided](f.decided)
			if e.Outcome != "denied" || e.By != "bob" || e.Reason != tt.reason {
				t.Errorf("approval.decided = %+v, want denied by bob", e)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	f := newFixture(t)
	r, ch := f.request("alpha", "call-1")
	ctx, cancel := context.WithTimeout(t.Context(), eventtest.Timeout)
	defer cancel()
	if err := f.clock.WaitTimerAt(ctx, start.Add(within)); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(start.Add(within - time.Second))
	select {
	case v := <-ch:
		t.Fatalf("the gate answered %+v a second before the expiry", v)
	default:
	}
	f.clock.Set(start.Add(within))
	v := verdict(t, ch)
	want := "expired: no operator decided on it within 2m0s. The call did not run."
	if v.Run || v.Outcome != router.OutcomeExpired || v.Result != want {
		t.Errorf("verdict %+v, want expired with %q", v, want)
	}
	if v.Decision == nil || v.Decision.Outcome != router.DecisionExpired || v.Decision.By != "deskd" || !v.Decision.DecidedAt.Equal(start.Add(within)) {
		t.Errorf("decision %+v, want expired by deskd at %v", v.Decision, start.Add(within))
	}
	e := eventtest.Next[event.ApprovalDecided](f.decided)
	if e.ID != r.ID || e.Outcome != "expired" || e.By != "deskd" || e.WaitedMS != within.Milliseconds() {
		t.Errorf("approval.decided = %+v, want expired by deskd after %d ms", e, within.Milliseconds())
	}
	if _, err := f.q.Decide("alpha", r.ID, true, "alice", ""); !errors.Is(err, approval.ErrUnknown) {
		t.Errorf("Decide on an expired call: %v, want ErrUnknown", err)
	}
}

func TestPausedAtRequest(t *testing.T) {
	f := newFixture(t)
	v := verdict(t, f.call(t.Context(), f.q.Gate(within, func() bool { return true }), placeOrder("alpha", "call-1")))
	want := "denied by deskd: the desk is paused. The call did not run; do not retry it unless the operator asks."
	if v.Run || v.Outcome != router.OutcomeDenied || v.Result != want {
		t.Errorf("verdict %+v, want denied with %q", v, want)
	}
	if v.Decision == nil || v.Decision.By != "deskd" || v.Decision.Reason != "the desk is paused" || v.Decision.Tool != "mcp__broker__place_order" {
		t.Errorf("decision %+v, want denied by deskd, the desk is paused", v.Decision)
	}
	e := eventtest.Next[event.ApprovalDecided](f.decided)
	if e.Desk != "alpha" || e.Outcome != "denied" || e.By != "deskd" || e.WaitedMS != 0 {
		t.Errorf("approval.decided = %+v, want denied by deskd at once", e)
	}
	eventtest.ExpectNone[event.ApprovalRequested](f.requested)
	if p := f.q.Pending(""); len(p) != 0 {
		t.Errorf("Pending = %+v, want none", p)
	}
}

func TestPauseWhileWaiting(t *testing.T) {
	f := newFixture(t)
	r, ch := f.request("alpha", "call-1")
	other, otherCh := f.request("beta", "call-2")
	event.Publish(f.bus, event.DeskPaused{Header: event.Header{At: start, Desk: "alpha"}, By: "carol", Reason: "news"})
	v := verdict(t, ch)
	want := "denied by carol: the desk was paused: news. The call did not run; do not retry it unless the operator asks."
	if v.Run || v.Outcome != router.OutcomeDenied || v.Result != want {
		t.Errorf("verdict %+v, want denied with %q", v, want)
	}
	e := eventtest.Next[event.ApprovalDecided](f.decided)
	if e.ID != r.ID || e.By != "carol" || e.Reason != "the desk was paused: news" {
		t.Errorf("approval.decided = %+v, want denied by carol", e)
	}
	if p := f.q.Pending(""); len(p) != 1 || p[0].ID != other.ID {
		t.Errorf("Pending = %+v, want only beta's call %s", p, other.ID)
	}
	if _, err := f.q.Decide("beta", other.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if v := verdict(t, otherCh); !v.Run {
		t.Errorf("beta's verdict %+v, want Run", v)
	}
}

// A desk paused after the gate's first look but before its call is in
// the queue: the gate looks again once the call is in.
func TestPausedWhileEnqueuing(t *testing.T) {
	f := newFixture(t)
	var looks atomic.Int32
	paused := func() bool { return looks.Add(1) > 1 }
	v := verdict(t, f.call(t.Context(), f.q.Gate(within, paused), placeOrder("alpha", "call-1")))
	if v.Run || v.Outcome != router.OutcomeDenied || v.Decision == nil || v.Decision.Reason != "the desk is paused" {
		t.Errorf("verdict %+v, want denied: the desk is paused", v)
	}
	if p := f.q.Pending(""); len(p) != 0 {
		t.Errorf("Pending = %+v, want none", p)
	}
}

func TestContextCancelled(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch := f.call(ctx, f.q.Gate(within, nil), placeOrder("alpha", "call-1"))
	r := eventtest.Next[event.ApprovalRequested](f.requested)
	cancel()
	v := verdict(t, ch)
	if v.Run || v.Outcome != router.OutcomeRefused || v.Result != "not decided: the turn was stopped" || v.Decision != nil {
		t.Errorf("verdict %+v, want refused, not decided, no decision", v)
	}
	// Live views hear that the call waits no more.
	e := eventtest.Next[event.ApprovalDecided](f.decided)
	if e.ID != r.ID || e.Outcome != router.OutcomeRefused || e.By != "deskd" {
		t.Errorf("approval.decided = %+v, want refused by deskd", e)
	}
	if _, err := f.q.Decide("alpha", r.ID, true, "alice", ""); !errors.Is(err, approval.ErrUnknown) {
		t.Errorf("Decide after the turn stopped: %v, want ErrUnknown", err)
	}
}

func TestUnknownID(t *testing.T) {
	f := newFixture(t)
	r, ch := f.request("alpha", "call-1")
	tests := []struct{ name, desk, id string }{
		{"never asked for", "alpha", "deadbeef"},
		{"another desk's", "beta", r.ID},
	}
	for _, tt := range tests {
		_, err := f.q.Decide(tt.desk, tt.id, true, "alice", "")
		if !errors.Is(err, approval.ErrUnknown) {
			t.Fatalf("%s: Decide(%s, %s) = %v, want ErrUnknown", tt.name, tt.desk, tt.id, err)
		}
		if want := "decide on call " + tt.id + " of desk " + tt.desk + ": " + approval.ErrUnknown.Error(); err.Error() != want {
			t.Errorf("%s: error %q, want %q", tt.name, err, want)
		}
	}
	if _, err := f.q.Decide("alpha", r.ID, false, "bob", ""); err != nil {
		t.Fatal(err)
	}
	verdict(t, ch)
	if _, err := f.q.Decide("alpha", r.ID, true, "alice", ""); !errors.Is(err, approval.ErrUnknown) {
		t.Errorf("Decide on a decided call: %v, want ErrUnknown", err)
	}
}

func TestConcurrentDecisions(t *testing.T) {
	f := newFixture(t)
	r, ch := f.request("alpha", "call-1")
	const n = 16
	var wg sync.WaitGroup
	var won atomic.Int32
	wins := make(chan router.Decision, n)
	for i := range n {
		wg.Go(func() {
			d, err := f.q.Decide("alpha", r.ID, i%2 == 0, "op", "")
			if err == nil {
				won.Add(1)
				wins <- d
			} else if !errors.Is(err, approval.ErrUnknown) {
				t.Errorf("Decide: %v", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d decisions succeeded, want exactly 1", won.Load())
	}
	d := <-wins
	v := verdict(t, ch)
	if v.Decision == nil || v.Decision.Outcome != d.Outcome || v.Run != (d.Outcome == router.DecisionApproved) {
		t.Errorf("verdict %+v, want the winning decision %+v", v, d)
	}
	f.bus.Close()
	if got := eventtest.Rest[event.ApprovalDecided](f.decided); len(got) != 1 {
		t.Errorf("%d approval.decided events, want 1: %+v", len(got), got)
	}
}

// Many calls decided at once, some by expiry: each gate hears the
// decision announced for its call, and ids never repeat.
func TestConcurrentCallsAndExpiry(t *testing.T) {
	f := newFixture(t)
	const n = 20
	chans := make([]<-chan router.Verdict, n)
	for i := range n {
		chans[i] = f.call(t.Context(), f.q.Gate(within, nil), placeOrder("alpha", string(rune('a'+i))))
	}
	ids := map[string]bool{}
	for range n {
		ids[eventtest.Next[event.ApprovalRequested](f.requested).ID] = true
	}
	if len(ids) != n {
		t.Fatalf("%d distinct ids for %d calls", len(ids), n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), eventtest.Timeout)
	defer cancel()
	if err := f.clock.WaitPending(ctx, n); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for id := range ids {
		wg.Go(func() { _, _ = f.q.Decide("alpha", id, true, "alice", "") })
	}
	f.clock.Set(start.Add(within))
	wg.Wait()
	outcomes := map[string]string{}
	for _, ch := range chans {
		v := verdict(t, ch)
		outcomes[v.Decision.ID] = v.Decision.Outcome
	}
	f.bus.Close()
	evs := eventtest.Rest[event.ApprovalDecided](f.decided)
	if len(evs) != n {
		t.Fatalf("%d approval.decided events, want %d", len(evs), n)
	}
	for _, e := range evs {
		if outcomes[e.ID] != e.Outcome {
			t.Errorf("call %s: event says %s, its gate heard %s", e.ID, e.Outcome, outcomes[e.ID])
		}
	}
}

func TestPendingOldestFirst(t *testing.T) {
	f := newFixture(t)
	a, _ := f.request("alpha", "call-1")
	f.clock.Advance(time.Second)
	b, _ := f.request("beta", "call-2")
	f.clock.Advance(time.Second)
	c, _ := f.request("alpha", "call-3")
	ids := func(ps []approval.Pending) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	tests := []struct {
		desk string
		want []string
	}{
		{"", []string{a.ID, b.ID, c.ID}},
		{"alpha", []string{a.ID, c.ID}},
		{"beta", []string{b.ID}},
		{"gamma", nil},
	}
	for _, tt := range tests {
		if got := ids(f.q.Pending(tt.desk)); !equal(got, tt.want) {
			t.Errorf("Pending(%q) = %v, want %v", tt.desk, got, tt.want)
		}
	}
	p := f.q.Pending("beta")[0]
	if p.Desk != "beta" || p.Session != "s1" || p.Trigger != "t1" || p.Call != "call-2" || p.Tool != "mcp__broker__place_order" ||
		!p.RequestedAt.Equal(start.Add(time.Second)) || !p.ExpiresAt.Equal(start.Add(time.Second+within)) {
		t.Errorf("Pending(beta)[0] = %+v", p)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDenyAll(t *testing.T) {
	f := newFixture(t)
	_, a := f.request("alpha", "call-1")
	_, b := f.request("alpha", "call-2")
	_, c := f.request("beta", "call-3")
	if n := f.q.DenyAll("alpha", "dave", "kill switch"); n != 2 {
		t.Errorf("DenyAll(alpha) = %d, want 2", n)
	}
	for _, ch := range []<-chan router.Verdict{a, b} {
		if v := verdict(t, ch); v.Run || v.Decision.By != "dave" || v.Decision.Reason != "kill switch" {
			t.Errorf("verdict %+v, want denied by dave", v)
		}
	}
	if p := f.q.Pending(""); len(p) != 1 || p[0].Desk != "beta" {
		t.Errorf("Pending = %+v, want beta's call only", p)
	}
	if n := f.q.DenyAll("alpha", "dave", ""); n != 0 {
		t.Errorf("DenyAll(alpha) again = %d, want 0", n)
	}
	f.q.DenyAll("", "dave", "")
	verdict(t, c)
}

func TestClose(t *testing.T) {
	f := newFixture(t)
	_, ch := f.request("alpha", "call-1")
	f.q.Close()
	v := verdict(t, ch)
	want := "denied by deskd: deskd is stopping. The call did not run; do not retry it unless the operator asks."
	if v.Run || v.Result != want {
		t.Errorf("verdict %+v, want %q", v, want)
	}
	later := verdict(t, f.call(t.Context(), f.q.Gate(within, nil), placeOrder("alpha", "call-2")))
	if later.Run || later.Result != want {
		t.Errorf("verdict of a call after Close %+v, want %q", later, want)
	}
	// Closed, the queue no longer hears of pauses; closing again is harmless.
	f.q.Close()
}

// TestApproveAfterPauseIsADenial: a desk paused (its pause on disk, Pause
// returned) before its desk.paused event reaches the queue: an approval
// in that window does not run the call; it is a denial that says so.
func TestApproveAfterPauseIsADenial(t *testing.T) {
	f := newFixture(t)
	var paused atomic.Bool
	out := f.call(t.Context(), f.q.Gate(within, paused.Load), placeOrder("fx", "c1"))
	r := eventtest.NextWhere(f.requested, func(e event.ApprovalRequested) bool { return e.Call == "c1" })
	paused.Store(true) // Desk.Pause has returned; its event is not yet delivered
	d, err := f.q.Decide("fx", r.ID, true, "bob", "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != "denied" || !strings.Contains(d.Reason, "after the pause") {
		t.Errorf("the decision %+v, want a denial saying the approval came after the pause", d)
	}
	if v := verdict(t, out); v.Run {
		t.Errorf("the call runs on a paused desk: %+v", v)
	}
}

// TestDecisionIsAnnouncedBeforeTheGateReturns: approval.decided is
// published before the call's gate returns, so that it comes before
// whatever the call's turn publishes next (its tool.called, its
// turn.completed): an operator reading the events, or a test waiting for
// the decision and then for the answer, never sees the answer first. An
// exporter, which runs in the publisher's goroutine, holds the
// announcement and lets the other goroutines run: were the gate woken
// first, it would return meanwhile.
func TestDecisionIsAnnouncedBeforeTheGateReturns(t *testing.T) {
	f := newFixture(t)
	gate := f.q.Gate(within, nil)
	for i := range 20 {
		c := placeOrder("alpha", fmt.Sprintf("call-%d", i))
		returned := make(chan struct{})
		early := make(chan bool, 1)
		cancel := event.Export(f.bus, func(e event.Event) {
			if d, ok := e.(event.ApprovalDecided); !ok || d.Call != c.ID {
				return
			}
			for range 1000 {
				runtime.Gosched()
				select {
				case <-returned:
					early <- true
					return
				default:
				}
			}
			early <- false
		})
		f.gates.Go(func() {
			defer close(returned)
			gate(t.Context(), c)
		})
		r := eventtest.NextWhere(f.requested, func(e event.ApprovalRequested) bool { return e.Call == c.ID })
		if _, err := f.q.Decide("alpha", r.ID, i%2 == 0, "bob", ""); err != nil {
			t.Fatalf("Decide: %v", err)
		}
		<-returned
		cancel()
		if <-early {
			t.Fatalf("the gate of %s returned before its approval.decided was published", c.ID)
		}
	}
}
