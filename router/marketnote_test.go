package router_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// TestMarketNoteOnceTheSessionHoldsAnEvent: the system prompt says how to
// read a market event (triggers.MarketNote) from the first request whose
// conversation holds one, and in every request after it (the history
// keeps the event: the prefix changes once), and never in an event's own
// message; deskd context counts it with the instructions.
func TestMarketNoteOnceTheSessionHoldsAnEvent(t *testing.T) {
	g := newLoopRig(t)
	p := &playbook{}
	const instructions = "You run the main desk."
	r := g.router(router.Settings{Instructions: instructions, Route: []router.Model{model(p, 0)}})
	contextInstructions := func() int64 {
		t.Helper()
		rep, err := r.Context("")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rep.Sources {
			if s.Name == "instructions" {
				return s.Tokens
			}
		}
		t.Fatalf("the context report has no instructions: %+v", rep.Sources)
		return 0
	}
	g.send(r, "m1", "Good morning.")
	if n := contextInstructions(); n != router.Estimate(instructions) {
		t.Errorf("context: instructions %d tokens before any event, want %d", n, router.Estimate(instructions))
	}
	event := triggers.Prompt(triggers.Trigger{ID: "e1", Kind: triggers.Market, Source: "api", Text: "NIFTY 22,000 <gap up> & firm",
		At: time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)})
	g.send(r, "e1", event)
	g.send(r, "m2", "Anything else?")
	reqs := p.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, want := range []bool{false, true, true} {
		if got := strings.Contains(reqs[i].System, triggers.MarketNote); got != want {
			t.Errorf("request %d: the system prompt carries the market note: %v, want %v:\n%s", i+1, got, want, reqs[i].System)
		}
		if strings.Count(reqs[i].System, "## Market events") > 1 {
			t.Errorf("request %d: the market note twice:\n%s", i+1, reqs[i].System)
		}
	}
	if !strings.HasPrefix(reqs[1].System, instructions+"\n\n"+triggers.MarketNote) {
		t.Errorf("the market note does not follow the instructions:\n%s", reqs[1].System)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Text != event || strings.Contains(last.Text, "untrusted") {
		t.Errorf("the event's message = %q, want its framing alone: %q", last.Text, event)
	}
	want := router.Estimate(instructions + "\n\n" + triggers.MarketNote)
	if n := contextInstructions(); n != want {
		t.Errorf("context: instructions %d tokens once the session holds an event, want %d (with the note)", n, want)
	}
}
