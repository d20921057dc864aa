package termview_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/triggers"
)

// TestStatusShowsElapsed: deskd status shows how long the running turn,
// or a rollover outside a turn, has run, and its phase.
func TestStatusShowsElapsed(t *testing.T) {
	since := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	now := since.Add(25 * time.Second)
	for _, tt := range []struct {
		running desk.Running
		now     time.Time
		want    string
	}{
		{desk.Running{Trigger: "t-12", Kind: triggers.Market, Since: since, Phase: desk.PhaseModel}, now, "t-12 (market, model, 25s)"},
		{desk.Running{Kind: desk.KindRollover, Since: since, Phase: desk.PhaseSummarising}, now, "rollover (summarising, 25s)"},
		{desk.Running{Trigger: "t-1", Kind: triggers.Manual, Since: since, Phase: desk.PhaseFolding}, since.Add(-time.Second), "t-1 (manual, folding)"},
	} {
		var b strings.Builder
		r := tt.running
		termview.StatusAt(&b, []desk.Status{{Name: "main", State: desk.StateRunning, Running: &r}}, tt.now)
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("deskd status of %+v at %s lacks %q:\n%s", tt.running, tt.now, tt.want, b.String())
		}
	}
}

// TestProgressLines: the lines deskd trigger --wait prints on stderr.
func TestProgressLines(t *testing.T) {
	at := time.Date(2026, 3, 2, 4, 32, 0, 0, time.UTC)
	for _, tt := range []struct {
		p    desk.TriggerProgress
		want string
	}{
		{desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t-1", State: triggers.StateQueued, Position: 2}, Depth: 3},
			"t-1: queued (position 2 of 3)\n"},
		{desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t-1", State: triggers.StateRunning}, Phase: desk.PhaseSummarising},
			"t-1: running (summarising)\n"},
		{desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t-1", State: triggers.StateAnswered, Session: "s-2", Turn: 1}},
			"t-1: answered, session s-2 turn 1\n"},
		{desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t-1", State: triggers.StateFailed, Reason: "model down\x1b[2J"}},
			"t-1: failed: model down\\u001b[2J\n"},
		{desk.TriggerProgress{Trigger: desk.TriggerStatus{ID: "t-1", State: triggers.StateQueued, Position: 1}, Depth: 1,
			Paused: &desk.Pause{By: "alice", At: at, Reason: "lunch"}},
			"t-1: queued (position 1 of 1)\ndesk main is paused by alice since 2026-03-02T04:32:00Z: lunch; the trigger waits in the queue until deskd resume main\n"},
	} {
		var b strings.Builder
		termview.Progress(&b, "main", tt.p)
		if b.String() != tt.want {
			t.Errorf("Progress(%+v) = %q, want %q", tt.p, b.String(), tt.want)
		}
	}
}

// TestStatusReckonsElapsedOnDesksClock: the elapsed time is measured
// against the status's as_of, deskd's clock, not the terminal's: under
// --clock-start the two differ by days.
func TestStatusReckonsElapsedOnDesksClock(t *testing.T) {
	since := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC) // long before the terminal's clock
	r := desk.Running{Trigger: "t-7", Kind: triggers.Market, Since: since, Phase: desk.PhaseModel}
	var b strings.Builder
	termview.Status(&b, []desk.Status{{Name: "main", State: desk.StateRunning, Running: &r, AsOf: since.Add(42 * time.Second)}})
	if !strings.Contains(b.String(), "t-7 (market, model, 42s)") {
		t.Errorf("deskd status lacks the elapsed time on deskd's clock, 42s:\n%s", b.String())
	}
}
