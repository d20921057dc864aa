package desk_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// mentionsModel is the scripted model, noting for each turn's request how
// many of its user messages hold text.
type mentionsModel struct {
	text string
	mu   sync.Mutex
	seen []int
}

func (m *mentionsModel) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task == router.TaskTurn {
		n := 0
		for _, msg := range req.Messages {
			if msg.Role == router.RoleUser && strings.Contains(msg.Text, m.text) {
				n++
			}
		}
		m.mu.Lock()
		m.seen = append(m.seen, n)
		m.mu.Unlock()
	}
	return router.Scripted{}.Complete(ctx, req)
}

func (m *mentionsModel) requests() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.seen...)
}

// TestOrphanMessageAfterACrash: the crash a joint flush of a trigger's
// ledger record and its session message would allow (BENCHMARKS.md, "Row
// 1: one durability point, analysis"; deskd fsyncs the record first, so
// only damage to the ledger leaves it): the session file keeps the
// trigger's user message, the ledger none of its records (the client had
// no 202 and tries again with the same id). The restart neither reports
// the trigger (it is unknown: not interrupted, not queued) nor runs it;
// the retry runs it once, its request carrying the text once (the history
// holds answered exchanges only), and so does the next turn's.
func TestOrphanMessageAfterACrash(t *testing.T) {
	// The crash: no record of B in the ledger; of B's turn the session
	// file keeps the user's message only.
	dir, _ := crashAfterB(t, true, func([]byte) bool { return false }, func(line []byte) bool {
		return bytes.Contains(line, []byte(`"role":"user"`))
	})

	m := &mentionsModel{text: "tick B"}
	h2 := desktest.New(t, desktest.Options{Model: m, Dir: dir})
	if s, found := h2.Desk.Trigger("B"); found {
		t.Errorf("after the restart B is known: %s (%s), want unknown (never acknowledged)", s.State, s.Reason)
	}
	if in := h2.Desk.Status().Interrupted; len(in) != 0 {
		t.Errorf("after the restart %d triggers interrupted (%+v), want none", len(in), in)
	}
	if got := m.requests(); len(got) != 0 {
		t.Errorf("the restart sent %d turn requests, want none", len(got))
	}

	if _, err := h2.Desk.Submit(triggers.Trigger{ID: "B", Kind: triggers.Market, Text: "tick B"}); err != nil {
		t.Fatal(err)
	}
	if s := settle(t, h2, "B"); s.State != triggers.StateAnswered {
		t.Fatalf("B resubmitted ended %s (%s), want answered", s.State, s.Reason)
	}
	if _, err := h2.Desk.Submit(triggers.Trigger{ID: "C", Kind: triggers.Market, Text: "tick C"}); err != nil {
		t.Fatal(err)
	}
	if s := settle(t, h2, "C"); s.State != triggers.StateAnswered {
		t.Fatalf("C ended %s (%s), want answered", s.State, s.Reason)
	}
	got := m.requests()
	if len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Errorf("user messages holding B's text in each turn request (B resubmitted, then C): %v, want [1 1]", got)
	}
}
