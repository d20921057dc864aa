package event_test

import (
	"testing"

	"github.com/deskd/deskd/desk/event"
)

// TestAnExporterHasEveryEventWhenPublishReturns: an exporter is called in
// the publisher's goroutine, so it has the event when Publish returns,
// however many come (a subscriber's mailbox drops what passes its
// bound); it may publish itself, and its panic is recovered and counted.
func TestAnExporterHasEveryEventWhenPublishReturns(t *testing.T) {
	b := event.New()
	defer b.Close()
	var got, echoes int
	cancel := event.Export(b, func(e event.Event) {
		switch e.(type) {
		case event.TurnStarted:
			got++
			if got == 1 {
				event.Publish(b, event.DeskPaused{Header: at(0)}) // re-entrant
			}
		case event.DeskPaused:
			echoes++
		case event.DeskResumed:
			panic("exporter panics")
		}
	})
	const n = 2*event.DefaultMailbox + 100 // more than its batch and its mailbox hold
	block := make(chan struct{})
	defer close(block)
	defer event.Subscribe(b, func(event.TurnStarted) { <-block })() // a stuck subscriber: its mailbox fills
	for i := range n {
		event.Publish(b, event.TurnStarted{Header: at(i % 60)})
		if got != i+1 {
			t.Fatalf("after publish %d the exporter had %d events", i+1, got)
		}
	}
	if echoes != 1 {
		t.Errorf("the exporter's own publication reached it %d times, want once", echoes)
	}
	if b.Dropped() == 0 {
		t.Error("the stuck subscriber dropped nothing: the test shows nothing")
	}
	event.Publish(b, event.DeskResumed{Header: at(1)})
	if b.Panics() != 1 {
		t.Errorf("Panics() = %d, want the exporter's one", b.Panics())
	}
	cancel()
	event.Publish(b, event.TurnStarted{Header: at(2)})
	if got != n {
		t.Errorf("the exporter got an event after its cancel")
	}
}

// TestStageExportsThenDelivers: Stage hands the event to the exporters at
// once and to the subscribers only when deliver is called, so that a
// producer records the state in between.
func TestStageExportsThenDelivers(t *testing.T) {
	b := event.New()
	exported := 0
	defer event.Export(b, func(event.Event) { exported++ })()
	delivered := make(chan event.TurnCompleted, 1)
	defer event.Subscribe(b, func(e event.TurnCompleted) { delivered <- e })()
	deliver := event.Stage(b, event.TurnCompleted{Header: at(0), Trigger: "A"})
	if exported != 1 {
		t.Fatalf("exported %d after Stage, want 1", exported)
	}
	b.Close() // drains the mailboxes: nothing was delivered yet
	select {
	case e := <-delivered:
		t.Fatalf("delivered %+v before deliver was called", e)
	default:
	}
	deliver() // after Close: nothing, no panic

	b2 := event.New()
	defer event.Subscribe(b2, func(e event.TurnCompleted) { delivered <- e })()
	event.Stage(b2, event.TurnCompleted{Header: at(0), Trigger: "B"})()
	b2.Close()
	if e := <-delivered; e.Trigger != "B" {
		t.Errorf("delivered %+v, want B", e)
	}
}
