package keeper_test

// Review of issue 21 items 6 and 9 (a reviewer's attacks): a summary the
// rollover already holds (journalled, or recorded in the session file) is
// reused only while it covers the session.

import (
	"errors"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

// errCrash stops a rollover after a step, as a crash there would.
var errCrash = errors.New("crash (injected after a rollover step)")

// failOnceAfter is a keeper.Options.AfterStep that fails the rollover with
// errCrash right after its first step named step, as a crash there would.
func failOnceAfter(step keeper.Step) func(keeper.Step) error {
	failed := false
	return func(s keeper.Step) error {
		if s == step && !failed {
			failed = true
			return errCrash
		}
		return nil
	}
}

// turnThenMidnight starts a desk at start (10:00 IST) whose first
// rollover fails with errCrash right after step, takes turn t1 and moves
// the clock on to midnight (00:00:05 IST the next day), when the desk
// rolls over. It returns the env, the desk and t1's session.
func turnThenMidnight(t *testing.T, start, midnight string, step keeper.Step) (*env, *proc, string) {
	t.Helper()
	e := newEnv(t, desktest.At(start), 0)
	p := e.start(keeper.Options{AfterStep: failOnceAfter(step)})
	p.turn(t, "t1", "Should we buy NIFTY?")
	session := p.router.SessionID()
	e.clock.Set(desktest.At(midnight))
	return e, p, session
}

// sessionOf returns the session trigger id's exchange was recorded in,
// among sessions; "" when none holds it.
func sessionOf(t *testing.T, folder *memory.Folder, id string, sessions ...string) string {
	t.Helper()
	for _, s := range sessions {
		recs, err := folder.ReadSession(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Trigger == id {
				return s
			}
		}
	}
	return ""
}

// TestReviewResumedRolloverSummaryCoversLaterTurns: a daily rollover is
// cut short (a crash) once its summary is journalled and announced; deskd
// restarts with its clock stepped back into the session's own date
// (--clock-start 23:00 IST, 1 December), so the desk keeps the session and
// a turn goes into it; at 00:00 IST, 2 December, the rollover resumes.
// The session's summary must cover that later turn (or the turn must not
// have gone into the session being summarised, without a second session
// of 1 December to summarise later). It used to resume with the
// journalled summary of the first run, leaving the turn at 23:00 in no
// summary.
func TestReviewResumedRolloverSummaryCoversLaterTurns(t *testing.T) {
	// 10:00 IST, 1 December; then 00:00:05 IST, 2 December.
	e, p1, s1 := turnThenMidnight(t, "2026-12-01T04:30:00Z", "2026-12-01T18:30:05Z", keeper.StepSummarised)
	if _, err := p1.keeper.RollOver(t.Context(), event.ReasonDailyRollover); !errors.Is(err, errCrash) {
		t.Fatalf("RollOver cut after its summary: err = %v, want %v", err, errCrash)
	}
	if err := p1.router.Close(); err != nil {
		t.Fatal(err)
	}

	// Restarted with the clock an hour before 2 December.
	e.clock = clock.NewFake(desktest.At("2026-12-01T17:30:00Z")) // 23:00 IST, 1 December (a fake clock only goes forward)
	p2 := e.start(keeper.Options{})
	p2.turn(t, "t2", "Close half of the position.")
	// Forward again: 2 December begins, the rollover resumes.
	e.clock.Set(desktest.At("2026-12-01T18:30:10Z")) // 00:00:10 IST, 2 December
	p2.turn(t, "t3", "Good morning.")
	s3 := p2.router.SessionID()
	if s3 == s1 {
		t.Fatal("no rollover on 2 December")
	}
	if d := p2.date(t); d != "2026-12-02" {
		t.Errorf("the session of 2 December's first turn is dated %s", d)
	}
	ids, err := p2.folder.SessionIDs()
	if err != nil {
		t.Fatal(err)
	}
	in := sessionOf(t, p2.folder, "t2", ids...)
	summary := memorytest.ReadFile(t, p2.folder.Path("summaries/2026-12-01.md"))
	switch {
	case in == "":
		t.Fatalf("trigger t2 is in no session of %v", ids)
	case in == s1 && !strings.Contains(summary, "2 exchanges:"):
		t.Errorf("turn t2 went into session %s, whose summary (summaries/2026-12-01.md) does not cover it: "+
			"the rollover resumed with the summary journalled before it:\n%s", s1, summary)
	case in != s1 && in != s3:
		t.Errorf("turn t2 went into session %s, neither the one rolled over (%s) nor 2 December's (%s): "+
			"a second session of 1 December", in, s1, s3)
	}
}

// TestReviewFailedRolloverThenTurnSummaryCoversIt: a rollover fails after
// its summary step (a later step's write fails, as on a full disk); the
// desk's next turn goes into the old session (Prepare goes on after a
// failed rollover); the retried rollover must not write a summary that
// lacks that turn. TestRollOverAsksAgainAfterATurnFollowedTheAnswer holds
// this for an answer only in the session file; here it is in the journal.
func TestReviewFailedRolloverThenTurnSummaryCoversIt(t *testing.T) {
	// 10:00 IST, 1 March; then 00:00:05 IST, 2 March.
	_, p, old := turnThenMidnight(t, "2026-03-01T04:30:00Z", "2026-03-01T18:30:05Z", keeper.StepFolded)
	// The turn's Prepare rolls over; the rollover fails at its fold; the
	// turn goes on in the old session, as the desk's does.
	p.turn(t, "t2", "Close half.")
	if got := sessionOf(t, p.folder, "t2", old); got != old {
		t.Fatalf("turn t2 after the failed rollover is not in the old session %s", old)
	}
	if _, err := p.keeper.RollOver(t.Context(), event.ReasonDailyRollover); err != nil {
		t.Fatal(err)
	}
	if p.router.SessionID() == old {
		t.Fatal("no rollover")
	}
	if got := memorytest.ReadFile(t, p.folder.Path("summaries/2026-03-01.md")); !strings.Contains(got, "2 exchanges:") {
		t.Errorf("summaries/2026-03-01.md does not cover turn t2, which the old session holds:\n%s", got)
	}
}
