package desk_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

// TestATriggerTakenAtOnceStoppedBeforeItsTurnIsQueuedAgain: a trigger the
// waiting desk took at once whose turn is stopped before its message (the
// desk stops while Prepare runs) is queued again in the ledger, no longer
// at once: a restart runs it, where it would interrupt a trigger taken at
// once that it finds without its message.
func TestATriggerTakenAtOnceStoppedBeforeItsTurnIsQueuedAgain(t *testing.T) {
	clk := clock.NewFake(start)
	k := &fakeKeeper{clk: clk, prepared: make(chan string, 1)}
	r := &fakeRouter{sent: make(chan triggers.Trigger, 10)}
	bus := event.New()
	defer bus.Close()
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	ledger, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := desk.New(desk.Options{Name: "main", Keeper: k, Router: r, Ledger: ledger, Clock: clk, Bus: bus, TakeAtOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(eventtest.Timeout)
	for !d.Waiting() {
		if time.Now().After(deadline) {
			t.Fatal("the desk's loop does not wait for work")
		}
		<-time.After(time.Millisecond) // the loop returns to its select with no event to say so
	}
	if _, err := d.Submit(triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"}); err != nil {
		t.Fatal(err)
	}
	if it, _ := ledger.Get("A"); !it.AtOnce {
		t.Fatalf("A was not taken at once: %+v", it)
	}
	select {
	case <-k.prepared:
	case <-time.After(eventtest.Timeout):
		t.Fatal("A's turn did not reach Prepare")
	}
	cancel()
	d.CutShort()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(eventtest.Timeout):
		t.Fatal("the desk did not stop")
	}
	if len(r.sent) != 0 {
		t.Fatalf("A reached the router")
	}
	_ = ledger.Close()
	again, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	it, _ := again.Get("A")
	if it.State != triggers.StateQueued || it.AtOnce {
		t.Errorf("A in the ledger after the stop: %s, at_once %v (%s); want queued, not at once", it.State, it.AtOnce, it.Reason)
	}
}
