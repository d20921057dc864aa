package keeper_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/router"
)

// failRolloverAfterTheAnswer sets the clock to 00:00:05 IST on 2 March
// and has p roll over with the journal's next write after the model's
// summary answer failing (through ffs), as a crash there would leave it:
// the rollover must fail with that error.
func failRolloverAfterTheAnswer(t *testing.T, e *env, p *proc, ffs *faultfs.FS) {
	t.Helper()
	e.model.answered = func() { ffs.FailAt(faultfs.Rename, 1, faultfs.ErrIO) }
	defer func() { e.model.answered = nil }()
	e.clock.Set(desktest.At("2026-03-01T18:30:05Z")) // 00:00:05 IST, 2 March
	if _, err := p.keeper.RollOver(t.Context(), event.ReasonDailyRollover); !errors.Is(err, faultfs.ErrIO) {
		t.Fatalf("RollOver with the journal's write failing: err = %v, want %v", err, faultfs.ErrIO)
	}
}

// TestRollOverReusesTheSummaryAnswerAfterACrash stops a rollover the
// instant the model's summary answer is in the session file, before the
// journal holds it (the journal's write fails, as a crash there would
// leave it), then restarts the desk: the resumed rollover uses that answer
// and does not ask the model again.
func TestRollOverReusesTheSummaryAnswerAfterACrash(t *testing.T) {
	tests := []struct {
		name     string
		provider router.ProviderName
		summary  string // the model's answer; "" for the scripted digest
		want     func(answer string) string
	}{
		{"a model's summary", "openai", "Bought 10 NIFTY futures.\n\nStill open: the hedge.\n",
			func(answer string) string { return answer }},
		{"the scripted model's summary", router.ScriptedProvider, "",
			func(answer string) string { return memory.ScriptedSummaryHeader("offline") + answer }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, desktest.At("2026-03-01T04:30:00Z"), 0) // 10:00 IST, 1 March
			e.provider, e.model.summary = tt.provider, tt.summary
			ffs := &faultfs.FS{Under: memory.RolloverFile}
			e.fs = ffs
			failed := eventtest.Watch[event.RolloverFailed](t, e.bus)
			summarized := eventtest.Watch[event.SessionSummarized](t, e.bus)

			p1 := e.start(keeper.Options{})
			p1.turn(t, "t1", "Should we buy NIFTY?")
			old := p1.router.SessionID()
			failRolloverAfterTheAnswer(t, e, p1, ffs)
			if ev := eventtest.Next[event.RolloverFailed](failed); ev.Step != string(keeper.StepSummarised) {
				t.Errorf("rollover.failed names step %q, want %q", ev.Step, keeper.StepSummarised)
			}
			if _, ok, err := p1.folder.ReadRollover(); err != nil || ok {
				t.Fatalf("ReadRollover after the failed write = ok %v, err %v; want no journal", ok, err)
			}
			recs, err := p1.folder.ReadSession(old)
			if err != nil {
				t.Fatal(err)
			}
			answer := ""
			for _, r := range recs {
				if r.Type == memory.RecordEvent && r.Kind == memory.SummaryKind {
					answer = r.Text
				}
			}
			if answer == "" {
				t.Fatalf("the session holds no summary answer: %+v", recs)
			}
			if err := p1.router.Close(); err != nil {
				t.Fatal(err)
			}

			p2 := e.start(keeper.Options{})
			first := p2.turn(t, "t2", "Good morning.")
			if p2.router.SessionID() == old {
				t.Fatal("no rollover after the restart")
			}
			if n := e.model.count(router.TaskSummary); n != 1 {
				t.Errorf("%d summary calls in all, want 1: the answer the session holds is used", n)
			}
			want := tt.want(answer)
			if got := memorytest.ReadFile(t, p2.folder.Path("summaries/2026-03-01.md")); got != want {
				t.Errorf("summaries/2026-03-01.md = %q, want %q", got, want)
			}
			if !strings.Contains(first, strings.TrimRight(want, "\n")) {
				t.Errorf("the new session's first message lacks the summary:\n%s", first)
			}
			if ev := eventtest.Next[event.SessionSummarized](summarized); ev.Session != old || ev.Degraded || ev.Attempts != 1 {
				t.Errorf("session.summarized = %+v, want session %s, not degraded, 1 attempt", ev, old)
			}
		})
	}
}

// TestRollOverAsksAgainAfterATurnFollowedTheAnswer: a summary answer that
// a later turn of the session followed does not cover the session, and is
// not used.
func TestRollOverAsksAgainAfterATurnFollowedTheAnswer(t *testing.T) {
	e := newEnv(t, desktest.At("2026-03-01T04:30:00Z"), 0) // 10:00 IST, 1 March
	ffs := &faultfs.FS{Under: memory.RolloverFile}
	e.fs = ffs
	p := e.start(keeper.Options{})
	p.turn(t, "t1", "Should we buy NIFTY?")
	failRolloverAfterTheAnswer(t, e, p, ffs)
	old := p.router.SessionID()
	if _, err := p.router.Send(t.Context(), trigger("t2", "Close half.")); err != nil { // a turn in the old session, as after a failed rollover
		t.Fatal(err)
	}
	if _, err := p.keeper.RollOver(t.Context(), event.ReasonDailyRollover); err != nil {
		t.Fatal(err)
	}
	if p.router.SessionID() == old {
		t.Fatal("no rollover")
	}
	if n := e.model.count(router.TaskSummary); n != 2 {
		t.Errorf("%d summary calls in all, want 2: a turn came after the first answer", n)
	}
	if got := memorytest.ReadFile(t, p.folder.Path("summaries/2026-03-01.md")); !strings.Contains(got, "2 exchanges:") {
		t.Errorf("summaries/2026-03-01.md does not cover the later turn:\n%s", got)
	}
}
