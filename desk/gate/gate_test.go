package gate_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/gate"
)

func TestShutOnce(t *testing.T) {
	var g gate.Gate
	if !g.Enter() {
		t.Fatal("a new gate is shut")
	}
	g.Leave()
	if !g.Shut() {
		t.Fatal("the first Shut reported the gate shut already")
	}
	if g.Shut() {
		t.Fatal("the second Shut reported that it shut the gate")
	}
	if g.Enter() {
		t.Fatal("Enter after Shut reported the gate open")
	}
}

func TestShutWaitsForWorkInside(t *testing.T) {
	var g gate.Gate
	if !g.Enter() {
		t.Fatal("a new gate is shut")
	}
	shut := make(chan bool)
	go func() { shut <- g.Shut() }()
	select {
	case <-shut:
		t.Fatal("Shut returned while work was inside the gate")
	default:
	}
	g.Leave()
	select {
	case first := <-shut:
		if !first {
			t.Fatal("Shut reported the gate shut already")
		}
	case <-time.After(10 * time.Second): // a deadline on the event, not a wait for time
		t.Fatal("Shut did not return after the work left")
	}
	if g.Enter() {
		t.Fatal("Enter after Shut reported the gate open")
	}
}
