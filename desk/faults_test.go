package desk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// countingModel is the scripted model, counting the turns each trigger
// text reached it.
type countingModel struct {
	mu    sync.Mutex
	turns map[string]int
}

func (m *countingModel) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task == router.TaskTurn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == router.RoleUser {
			m.mu.Lock()
			for _, text := range []string{"tick A", "tick B"} {
				if strings.Contains(last.Text, text) {
					m.turns[text]++
				}
			}
			m.mu.Unlock()
		}
	}
	return router.Scripted{}.Complete(ctx, req)
}

func (m *countingModel) count(text string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns[text]
}

// settle waits until trigger id reaches a final state, moving the fake
// clock on so that a stalled desk retries its writes.
func settle(t *testing.T, h *desktest.Desk, id string) desk.TriggerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		changed := h.Events.Changed() // before the look: an event between the two is not missed
		if s, ok := h.Desk.Trigger(id); ok && s.State.Terminal() && h.Desk.Status().Running == nil {
			return s
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Millisecond):
			h.Clock.Advance(time.Second)
		}
	}
	s, _ := h.Desk.Trigger(id)
	t.Fatalf("trigger %s did not settle within 10s: %+v (desk %+v)", id, s, h.Desk.Status())
	return s
}

// waitStorageClear waits until the desk reports no storage trouble,
// moving the fake clock on so that it retries.
func waitStorageClear(t *testing.T, h *desktest.Desk) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		changed := h.Events.Changed()
		if h.Desk.Status().Storage == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the desk still reports storage trouble once writes work: %+v", h.Desk.Status().Storage)
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Millisecond):
			h.Clock.Advance(time.Second)
		}
	}
}

// submitRetrying submits t, once more if the disk refused it (as a client
// retries a 503): the fault is one-shot.
func submitRetrying(t *testing.T, h *desktest.Desk, tr triggers.Trigger) {
	t.Helper()
	if _, err := h.Desk.Submit(tr); err != nil {
		if !errors.Is(err, desk.ErrStorage) {
			t.Fatalf("Submit %s: %v, want nil or ErrStorage", tr.ID, err)
		}
		if _, err := h.Desk.Submit(tr); err != nil {
			t.Fatalf("Submit %s again: %v", tr.ID, err)
		}
	}
}

// checkFilesParse reopens the ledger and every session file of the desk
// and fails on any damage: a torn tail or a bad line.
func checkFilesParse(t *testing.T, dir string) {
	t.Helper()
	l, err := triggers.OpenLedger(filepath.Join(dir, "main", triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	if torn, skipped := l.Damage(); torn != nil || len(skipped) > 0 {
		t.Errorf("the ledger is damaged: torn %+v, skipped %+v", torn, skipped)
	}
	_ = l.Close()
	folder, err := memory.OpenFolder(filepath.Join(dir, "main"), "main", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := folder.SessionIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		s, _, torn, err := folder.OpenSession(id)
		if err != nil {
			t.Fatal(err)
		}
		if torn != nil || s.SkippedLines() > 0 {
			t.Errorf("session %s is damaged: torn %+v, %d bad lines", id, torn, s.SkippedLines())
		}
		_ = s.Close()
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "main", "*.torn-*")); len(entries) > 0 {
		t.Errorf("torn tails set aside: %v", entries)
	}
}

// faultCase is one failure to inject: the nth operation op.
type faultCase struct {
	op faultfs.Op
	n  int
}

// faultCases runs prepare, then counts the operations of phase, on a desk
// with no failure, and returns one case for each operation of phase.
func faultCases(t *testing.T, prepare, phase func(t *testing.T, h *desktest.Desk)) []faultCase {
	ffs := &faultfs.FS{}
	h := desktest.New(t, desktest.Options{Model: &countingModel{turns: map[string]int{}}, FS: ffs})
	prepare(t, h)
	before := map[faultfs.Op]int{}
	for _, op := range allOps {
		before[op] = ffs.Count(op)
	}
	phase(t, h)
	var cases []faultCase
	for _, op := range allOps {
		for n := 1; n <= ffs.Count(op)-before[op]; n++ {
			cases = append(cases, faultCase{op, n})
		}
	}
	h.Stop()
	if len(cases) < 5 {
		t.Fatalf("only %d durable operations counted; the fault layer sees too little", len(cases))
	}
	return cases
}

var allOps = []faultfs.Op{faultfs.Write, faultfs.Sync, faultfs.Create, faultfs.Rename}

// TestFaultEachWriteOfATurn fails each durable operation of a turn in
// turn (the trigger's records, the session's messages), with ENOSPC and
// with EIO: the acknowledged trigger reaches the model exactly once and
// ends answered (or failed, with the write error, when the reply itself
// could not be kept), every file parses, and the desk goes on once writes
// succeed.
func TestFaultEachWriteOfATurn(t *testing.T) {
	cases := faultCases(t, func(*testing.T, *desktest.Desk) {}, func(t *testing.T, h *desktest.Desk) {
		submitRetrying(t, h, triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
		settle(t, h, "A")
	})
	for _, errno := range []error{faultfs.ErrNoSpace, faultfs.ErrIO} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s-%d", errno, c.op, c.n), func(t *testing.T) {
				ffs := &faultfs.FS{}
				m := &countingModel{turns: map[string]int{}}
				dir := t.TempDir()
				h := desktest.New(t, desktest.Options{Model: m, FS: ffs, Dir: dir})
				ffs.FailAt(c.op, c.n, errno)
				submitRetrying(t, h, triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
				s := settle(t, h, "A")
				switch {
				case s.State == triggers.StateAnswered:
				case s.State == triggers.StateFailed && strings.Contains(s.Reason, errno.Error()):
				default:
					t.Errorf("trigger A ended %s (%q), want answered (or failed on the write)", s.State, s.Reason)
				}
				if n := m.count("tick A"); n != 1 {
					t.Errorf("trigger A reached the model %d times, want once", n)
				}
				waitStorageClear(t, h)
				submitRetrying(t, h, triggers.Trigger{ID: "B", Kind: triggers.Market, Text: "tick B"})
				if s := settle(t, h, "B"); s.State != triggers.StateAnswered {
					t.Errorf("after the fault, trigger B ended %s (%q), want answered", s.State, s.Reason)
				}
				h.Stop()
				checkFilesParse(t, dir)
			})
		}
	}
}

// TestFaultEachWriteOfARollover fails each durable operation of a
// rollover in turn: the old session stays whole, the desk rolls over once
// writes succeed (at the next turn at the latest), and the new session's
// first turn is answered.
func TestFaultEachWriteOfARollover(t *testing.T) {
	rollover := func(t *testing.T, h *desktest.Desk) {
		h.Clock.Advance(14*time.Hour + time.Minute) // past 00:00 IST
		eventtest.NextWhere(h.Events, func(e event.SessionStarted) bool { return e.Reason == "daily_rollover" })
	}
	prepare := func(t *testing.T, h *desktest.Desk) {
		submitRetrying(t, h, triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
		if s := settle(t, h, "A"); s.State != triggers.StateAnswered {
			t.Fatalf("trigger A: %+v", s)
		}
		if err := os.MkdirAll(filepath.Join(h.Dir, "main", memory.NotesDir), 0o750); err != nil { // made by a first note
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.Dir, "main", memory.NotesDir, "2026-03-02.md"), []byte("- a lesson\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	cases := faultCases(t, prepare, rollover)
	if len(cases) < 10 {
		t.Fatalf("only %d durable operations counted in a rollover", len(cases))
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%d", c.op, c.n), func(t *testing.T) {
			ffs := &faultfs.FS{}
			m := &countingModel{turns: map[string]int{}}
			dir := t.TempDir()
			h := desktest.New(t, desktest.Options{Model: m, FS: ffs, Dir: dir})
			prepare(t, h)
			old := h.Router.SessionID()
			folder, err := memory.OpenFolder(filepath.Join(dir, "main"), "main", h.Clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			oldRecords, err := folder.ReadSession(old)
			if err != nil {
				t.Fatal(err)
			}
			ffs.FailAt(c.op, c.n, faultfs.ErrNoSpace)
			h.Clock.Advance(14*time.Hour + time.Minute)
			submitRetrying(t, h, triggers.Trigger{ID: "B", Kind: triggers.Market, Text: "tick B"})
			if s := settle(t, h, "B"); s.State != triggers.StateAnswered {
				t.Errorf("trigger B after the boundary ended %s (%q), want answered", s.State, s.Reason)
			}
			if n := m.count("tick B"); n != 1 {
				t.Errorf("trigger B reached the model %d times, want once", n)
			}
			if date, _ := h.Router.TradingDate(); date.String() != "2026-03-03" {
				t.Errorf("the session's trading date is %s after the boundary, want 2026-03-03 (the rollover never completed)", date)
			}
			if h.Router.SessionID() == old {
				t.Errorf("still in the old session %s", old)
			}
			got, err := folder.ReadSession(old)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < len(oldRecords) {
				t.Errorf("the old session lost records: %d, had %d", len(got), len(oldRecords))
			}
			for i := range oldRecords {
				if i < len(got) && (got[i].Type != oldRecords[i].Type || got[i].Text != oldRecords[i].Text) {
					t.Errorf("the old session's record %d changed: %+v, was %+v", i, got[i], oldRecords[i])
				}
			}
			if _, ok, err := folder.ReadSummary(mustDate(t, "2026-03-02")); err != nil || !ok {
				t.Errorf("no summary of 2026-03-02 (%v)", err)
			}
			h.Stop()
			checkFilesParse(t, dir)
		})
	}
}

func mustDate(t *testing.T, s string) memory.Date {
	t.Helper()
	d, err := memory.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// textCounter is the scripted model, counting each user text that reached it.
type textCounter struct {
	mu    sync.Mutex
	texts map[string]int
}

func (m *textCounter) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task == router.TaskTurn {
		if last := req.Messages[len(req.Messages)-1]; last.Role == router.RoleUser {
			m.mu.Lock()
			m.texts[last.Text]++
			m.mu.Unlock()
		}
	}
	return router.Scripted{}.Complete(ctx, req)
}

// TestStallRecoveryRunsEachTriggerOnce: triggers submitted while a stalled
// desk recovers (it takes up from the ledger what waits) are each run
// exactly once: the recovery's look at the ledger never queues a trigger
// that a Submit queues at the same moment. The disk fails again and again
// while a client submits (retrying what the disk refused), so that many
// recoveries meet many submits.
func TestStallRecoveryRunsEachTriggerOnce(t *testing.T) {
	ffs := &faultfs.FS{}
	m := &textCounter{texts: map[string]int{}}
	h := desktest.New(t, desktest.Options{Model: m, FS: ffs, QueueLimit: 1000})
	const n = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			id := fmt.Sprintf("c%03d", i)
			for {
				_, err := h.Desk.Submit(triggers.Trigger{ID: id, Kind: triggers.Market, Text: "text " + id})
				if err == nil {
					break
				}
				if !errors.Is(err, desk.ErrStorage) {
					t.Errorf("Submit %s: %v", id, err)
					return
				}
			}
		}
	}()
	for {
		select {
		case <-done:
		case <-time.After(time.Millisecond):
			ffs.FailAt(faultfs.Sync, 1, faultfs.ErrNoSpace) // the disk fails once more
			h.Clock.Advance(time.Second)                    // and the stalled desk retries
			continue
		}
		break
	}
	for i := range n {
		settle(t, h, fmt.Sprintf("c%03d", i))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	runs := 0
	for text, c := range m.texts {
		if c != 1 {
			t.Errorf("%q reached the model %d times, want once", strings.SplitN(text, "\n", 2)[0], c)
		}
		runs += c
	}
	if runs != n {
		t.Errorf("%d turns for %d triggers, want one each", runs, n)
	}
}
