package keeper_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/logtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/router"
)

// warnings returns the messages of the lines logged at warn in log.
func warnings(t *testing.T, log *logtest.Buffer) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == "warn" {
			out = append(out, rec.Message)
		}
	}
	return out
}

// TestClockBehindTheSessionKeepsIt rolls a desk over at 00:00 IST on
// 2 December, then restarts it with its clock at 23:00 IST on 1 December
// (--clock-start, or a clock stepped back): the session of 2 December
// stays current, nothing is summarised, the turns carry no "new trading
// day" line, and the keeper warns once. Going forward again, the desk rolls
// over once, at the start of 3 December, into a session of that date.
func TestClockBehindTheSessionKeepsIt(t *testing.T) {
	e := newEnv(t, desktest.At("2026-12-01T04:30:00Z"), 0) // 10:00 IST, 1 December
	p1 := e.start(keeper.Options{})
	p1.turn(t, "t1", "Should we buy NIFTY?")
	first := p1.router.SessionID()
	e.clock.Set(desktest.At("2026-12-01T18:30:00Z")) // 00:00 IST, 2 December
	p1.turn(t, "t2", "Market opens.")
	second := p1.router.SessionID()
	if second == first || p1.date(t) != "2026-12-02" {
		t.Fatalf("at 00:00 IST on 2 December: session %s of %s, want a new one of 2026-12-02", second, p1.date(t))
	}
	if err := p1.router.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart an hour before the session's date begins.
	e.clock = clock.NewFake(desktest.At("2026-12-01T17:30:00Z")) // 23:00 IST, 1 December
	var log logtest.Buffer
	p2 := e.start(keeper.Options{Log: zerolog.New(&log)})
	if p2.keeper.Due() {
		t.Error("Due() with the clock behind the session's trading date")
	}
	for _, id := range []string{"t3", "t4"} {
		if got := p2.turn(t, id, "Behind."); got != "Behind." {
			t.Errorf("turn %s with the clock behind was sent as %q, want it unchanged", id, got)
		}
	}
	if got := p2.router.SessionID(); got != second {
		t.Errorf("with the clock behind: session %s, want %s kept", got, second)
	}
	if got := p2.date(t); got != "2026-12-02" {
		t.Errorf("with the clock behind: trading date %s, want 2026-12-02", got)
	}
	if n := e.model.count(router.TaskSummary); n != 1 {
		t.Errorf("with the clock behind: %d summary calls in all, want 1 (the rollover into 2 December)", n)
	}
	warned := warnings(t, &log)
	if len(warned) != 1 {
		t.Fatalf("warnings with the clock behind = %q, want one", warned)
	}
	for _, want := range []string{"main", second, "2026-12-01", "2026-12-02"} {
		if !strings.Contains(warned[0], want) {
			t.Errorf("warning %q does not name %q", warned[0], want)
		}
	}

	// Forward again: the same date as the session's, then the next.
	third := forwardTo3December(t, e, p2, "t5", "t6", second)
	if got, want := memorytest.DirNames(t, p2.folder.Path(memory.SessionsDir)), sortedCopy([]string{first + ".jsonl", second + ".jsonl", third + ".jsonl"}); !slices.Equal(got, want) {
		t.Errorf("sessions/ = %v, want %v", got, want)
	}
	if got, want := memorytest.DirNames(t, p2.folder.Path(memory.SummariesDir)), []string{"2026-12-01.md", "2026-12-02.md"}; !slices.Equal(got, want) {
		t.Errorf("summaries/ = %v, want %v", got, want)
	}
	if n := e.model.count(router.TaskSummary); n != 2 {
		t.Errorf("%d summary calls in all, want 2", n)
	}
	if got := warnings(t, &log); len(got) != 1 {
		t.Errorf("warnings in all = %q, want the one", got)
	}

	// No turn taken while the clock was behind was told of a new trading day.
	recs, err := p2.folder.ReadSession(second)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if (r.Trigger == "t3" || r.Trigger == "t4") && r.Role == "user" && r.Text != "Behind." {
			t.Errorf("turn %s with the clock behind was recorded as %q, want %q", r.Trigger, r.Text, "Behind.")
		}
	}
}

// TestManualRolloverWithTheClockBehind asks for a rollover while deskd's
// clock is behind the session's trading date: the new session keeps that
// date (it is never dated before the session it follows), and the desk
// rolls over next when a later date begins.
func TestManualRolloverWithTheClockBehind(t *testing.T) {
	e := newEnv(t, desktest.At("2026-12-01T18:30:00Z"), 0) // 00:00 IST, 2 December
	p1 := e.start(keeper.Options{})
	p1.turn(t, "t1", "Market opens.")
	second := p1.router.SessionID()
	if err := p1.router.Close(); err != nil {
		t.Fatal(err)
	}

	e.clock = clock.NewFake(desktest.At("2026-12-01T17:30:00Z")) // 23:00 IST, 1 December
	p2 := e.start(keeper.Options{})
	id, err := p2.keeper.RollOver(t.Context(), "manual_rollover")
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, p2.folder, id); h.Parent != second || h.Date != "2026-12-02" {
		t.Errorf("the session a manual rollover started with the clock behind: parent %s, date %s; want %s, 2026-12-02", h.Parent, h.Date, second)
	}
	if got := p2.date(t); got != "2026-12-02" {
		t.Errorf("trading date after the manual rollover = %s, want 2026-12-02", got)
	}
	if got, want := memorytest.DirNames(t, p2.folder.Path(memory.SummariesDir)), []string{"2026-12-02.md"}; !slices.Equal(got, want) {
		t.Errorf("summaries/ = %v, want %v", got, want)
	}
	forwardTo3December(t, e, p2, "t2", "t3", id)
}

// forwardTo3December takes turn sameDay at 10:00 IST on 2 December, which
// stays in session kept (of that date), then turn nextDay at 00:00 IST on
// 3 December, which rolls over into a session of that date following
// kept; it returns that session's id.
func forwardTo3December(t *testing.T, e *env, p *proc, sameDay, nextDay, kept string) string {
	t.Helper()
	e.clock.Set(desktest.At("2026-12-02T04:30:00Z")) // 10:00 IST, 2 December
	p.turn(t, sameDay, "Same day.")
	if got := p.router.SessionID(); got != kept {
		t.Errorf("at 10:00 IST on 2 December: session %s, want %s", got, kept)
	}
	e.clock.Set(desktest.At("2026-12-02T18:30:00Z")) // 00:00 IST, 3 December
	p.turn(t, nextDay, "Next day.")
	next := p.router.SessionID()
	if next == kept {
		t.Fatal("no rollover at 00:00 IST on 3 December")
	}
	if h := header(t, p.folder, next); h.Parent != kept || h.Date != "2026-12-03" {
		t.Errorf("the session of 3 December: parent %s, date %s; want %s, 2026-12-03", h.Parent, h.Date, kept)
	}
	return next
}
