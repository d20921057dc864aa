package desk_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/triggers"
)

// TestLedgerCompactedBetweenTurns: a ledger grown far past what it keeps
// (here by old finished triggers that New left, being under its bound at
// start) is compacted after a turn, before the next one.
func TestLedgerCompactedBetweenTurns(t *testing.T) {
	dir := t.TempDir()
	l, err := triggers.OpenLedger(filepath.Join(dir, "main", triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	old := start.Add(-60 * 24 * time.Hour)
	for i := range 300 {
		id := fmt.Sprintf("old-%d", i)
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: "tick", At: old}
		for _, r := range []triggers.Record{
			{At: old, ID: id, State: triggers.StateQueued, Trigger: &tr},
			{At: old, ID: id, State: triggers.StateRunning},
			{At: old, ID: id, State: triggers.StateSent, Session: "s0", Turn: i + 1},
			{At: old, ID: id, State: triggers.StateAnswered, Session: "s0", Turn: i + 1, Reply: "done"},
		} {
			if err := l.Note(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	h := desktest.New(t, desktest.Options{Dir: dir})
	if n := h.Ledger.Records(); n != 1200 {
		t.Fatalf("at start the ledger holds %d records, want the 1200 written (New compacts only past its own bound)", n)
	}
	submitRetrying(t, h, triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
	settle(t, h, "A")
	submitRetrying(t, h, triggers.Trigger{ID: "B", Kind: triggers.Market, Text: "tick B"})
	settle(t, h, "B") // A's turn, and the compaction after it, are over
	if n, live := h.Ledger.Records(), h.Ledger.Len(); n > 10 || live != 2 {
		t.Errorf("after two turns the ledger holds %d records of %d triggers, want it compacted to A and B", n, live)
	}
	if _, ok := h.Ledger.Get("old-0"); ok {
		t.Error("an old finished trigger is still in the ledger")
	}
	if s, ok := h.Desk.Trigger("A"); !ok || s.State != triggers.StateAnswered {
		t.Errorf("Trigger(A) = %+v, %v", s, ok)
	}
}
