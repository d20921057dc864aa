package router_test

import (
	"testing"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/memory"
)

// TestSpendWithTheClockBehind restarts a desk that spent on 2 December
// with deskd's clock at 23:00 IST on 1 December (--clock-start before the
// spend's date, or a clock stepped back): the day's counters are those of
// 2 December, not a fresh day, and the calls made meanwhile count into
// them, live, after a restart, and once the clock is on 2 December again.
func TestSpendWithTheClockBehind(t *testing.T) {
	g := newRig(t, "2026-12-02T04:30:00Z") // 10:00 IST, 2 December
	p := &ticking{clock: g.clock}
	r1, _, _ := g.open(priced(p))
	send(t, r1, "t1", "one")
	send(t, r1, "t2", "two")
	before := r1.Spend()
	dec2 := memory.Date{Year: 2026, Month: 12, Day: 2}
	if before.Date != dec2 || before.DayTokens == 0 {
		t.Fatalf("spend on 2 December = %+v", before)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}

	g.clock = clock.NewFake(desktest.At("2026-12-01T17:30:00Z")) // 23:00 IST, 1 December
	p.clock = g.clock
	r2, folder, _ := g.open(priced(p))
	if got := r2.Spend(); got != before {
		t.Errorf("spend with the clock behind = %+v, want the spend of 2 December %+v", got, before)
	}
	send(t, r2, "t3", "three")
	state := readFile(t, folder.Path(memory.StateFile))
	send(t, r2, "t4", "four")
	if after := readFile(t, folder.Path(memory.StateFile)); after != state {
		t.Errorf("the state file was rewritten by a turn with the clock behind (no new day):\nbefore %s\nafter  %s", state, after)
	}
	want := before
	for _, u := range []memory.Usage{p.usage(2), p.usage(3)} {
		want.DayTokens += int64(u.InputTokens + u.OutputTokens)
		want.SessionTokens += int64(u.InputTokens + u.OutputTokens)
		want.DayCachedTokens += int64(u.CachedTokens)
		want.DayCost += callCost(u)
	}
	live := r2.Spend()
	if live != want {
		t.Errorf("spend after a call with the clock behind = %+v, want %+v", live, want)
	}

	// A restart reads the same spend back (the call charged at 1 December
	// counts into 2 December's day), and the clock on 2 December again
	// keeps it.
	r3, _, _ := g.open(priced(p))
	if got := r3.Spend(); got != live {
		t.Errorf("spend after a restart = %+v, want the live spend %+v", got, live)
	}
	g.clock.Set(desktest.At("2026-12-02T04:30:00Z")) // 10:00 IST, 2 December
	if got := r3.Spend(); got != live {
		t.Errorf("spend on 2 December again = %+v, want %+v", got, live)
	}
	g.clock.Set(desktest.At("2026-12-02T18:30:00Z")) // 00:00 IST, 3 December
	if got := r3.Spend(); got.Date != (memory.Date{Year: 2026, Month: 12, Day: 3}) || got.DayTokens != 0 || got.SessionTokens != live.SessionTokens {
		t.Errorf("spend on 3 December = %+v, want a new day (session tokens %d)", got, live.SessionTokens)
	}
}
