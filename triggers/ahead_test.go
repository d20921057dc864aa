package triggers_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/triggers"
)

// TestSchedulerAheadOf: a schedule whose last claimed slot is later than
// the clock (a --clock-start before it) is reported by AheadOf, and indeed
// fires nothing until its next slot after that one; one whose last slot
// is behind the clock, or that the ledger does not know, is not reported.
func TestSchedulerAheadOf(t *testing.T) {
	start := istAt(2026, 3, 1, 23, 58)
	last := map[string]time.Time{"tape": istAt(2026, 3, 2, 0, 5), "brief": istAt(2026, 3, 1, 9, 0)}
	entries := []triggers.Entry{
		{Name: "tape", Spec: spec(t, "* * * * *"), Text: "check"},
		{Name: "brief", Spec: spec(t, "0 9 * * *"), Text: "plan"},
		{Name: "new", Spec: spec(t, "0 10 * * *"), Text: "new"},
	}
	s := &triggers.Scheduler{Desk: "main", Clock: clock.NewFake(start), Entries: entries,
		Last: func(name string) (time.Time, bool) { v, ok := last[name]; return v, ok }}
	got := s.AheadOf(start)
	if len(got) != 1 || got[0].Schedule != "tape" || !got[0].Last.Equal(last["tape"]) {
		t.Fatalf("AheadOf(%v) = %+v, want tape up to 00:05", start, got)
	}
	if got := s.AheadOf(istAt(2026, 3, 2, 0, 5)); len(got) != 0 {
		t.Errorf("AheadOf at the last slot = %+v, want none", got)
	}
	if got := (&triggers.Scheduler{Entries: entries}).AheadOf(start); got != nil {
		t.Errorf("AheadOf without a ledger = %+v, want none", got)
	}

	h := runScheduler(t, start, entries[:1], last)
	h.advanceTo(t, istAt(2026, 3, 2, 0, 6))
	expect(t, h.fired, "fired", "tape@00:06") // not 23:59 nor 00:00 to 00:05: claimed already
	expectNone(t, h.missed, "missed")
}
