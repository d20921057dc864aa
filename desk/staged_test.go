package desk_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

// ledgerSays is the last state the ledger's file on disk records for
// trigger id: what a SIGKILL at this instant would leave.
func ledgerSays(t *testing.T, dir, id string) triggers.State {
	b, err := os.ReadFile(filepath.Join(dir, "main", triggers.LedgerFile))
	if err != nil {
		t.Errorf("read the ledger: %v", err)
		return ""
	}
	var last triggers.State
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r triggers.Record
		if json.Unmarshal(line, &r) == nil && r.ID == id {
			last = r.State
		}
	}
	return last
}

// exported is what an exporter saw of a turn's outcome event: its id,
// and what the ledger's file said of the trigger at that instant.
type exported struct {
	id     string
	ledger triggers.State
}

// outcomeExporter records, for every turn.completed of trigger id, what
// the ledger's file under dir said when the exporter got it.
func outcomeExporter(t *testing.T, dir, id string) (func(event.Event), func() []exported) {
	var mu sync.Mutex
	var seen []exported
	return func(e event.Event) {
			if c, ok := e.(event.TurnCompleted); ok && c.Trigger == id {
				s := ledgerSays(t, dir, id)
				mu.Lock()
				seen = append(seen, exported{c.ID, s})
				mu.Unlock()
			}
		}, func() []exported {
			mu.Lock()
			defer mu.Unlock()
			return append([]exported(nil), seen...)
		}
}

// TestATurnsOutcomeIsExportedBeforeTheLedgerRecordsIt: the exporter (the
// NATS outbox) gets turn.completed before the ledger's file says
// answered, so a SIGKILL between the two leaves the event kept and the
// trigger unanswered in the ledger, which a restart reconciles from the
// session file and announces again with the same id; it never leaves the
// trigger answered and its event lost (the restart would not announce it
// again). The subscribers, after it, find it answered. The restart's
// reconciled turn.completed is exported before its ledger record too.
func TestATurnsOutcomeIsExportedBeforeTheLedgerRecordsIt(t *testing.T) {
	dir := t.TempDir()
	export, seen := outcomeExporter(t, dir, "A")
	h := desktest.New(t, desktest.Options{Dir: dir, Export: export})
	submitRetrying(t, h, triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
	done := settle(t, h, "A")
	got := eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "A" })
	if s, _ := h.Desk.Trigger("A"); s.State != triggers.StateAnswered {
		t.Errorf("a subscriber of turn.completed finds A %s, want answered", s.State)
	}
	first := seen()
	if len(first) != 1 || first[0].ledger == triggers.StateAnswered || first[0].id == "" || first[0].id != got.ID {
		t.Fatalf("exported %+v; want one turn.completed, with an id (the subscribers' %q), before the ledger says answered", first, got.ID)
	}
	h.Stop()
	_ = h.Ledger.Close()

	// The kill just after the export: the ledger lacks A's answered record.
	dropAnswers(t, filepath.Join(dir, "main", triggers.LedgerFile))
	h2 := desktest.New(t, desktest.Options{Dir: dir, Export: export})
	again := eventtest.NextWhere(h2.Events, func(e event.TurnCompleted) bool { return e.Trigger == "A" })
	if !again.Reconciled || again.Turn != done.Turn {
		t.Errorf("turn.completed after the restart = %+v, want A reconciled, turn %d", again, done.Turn)
	}
	all := seen()
	if len(all) != 2 || all[1].ledger == triggers.StateAnswered || all[1].id != first[0].id {
		t.Errorf("exported %+v; want the reconciled turn.completed before its ledger record, with the first copy's id %q", all, first[0].id)
	}
}

// dropAnswers removes the answered records from the ledger at path, as
// a kill just before they were written leaves it; it fails the test when
// there is none.
func dropAnswers(t *testing.T, path string) {
	t.Helper()
	unanswered := func(line []byte) bool { return !bytes.Contains(line, []byte(`"state":"answered"`)) }
	if filter(t, path, unanswered) == 0 {
		t.Fatal("the ledger has no answered record to remove")
	}
}
