package triggers_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// TestLedgerKeepsAtOnceOfAnOpenTrigger: a queued record's AtOnce is what
// Get and Unfinished say of its trigger through its running and sent
// records, a reopen (with and without the index Close leaves) and a
// compaction; a later queued record without it (a trigger queued again)
// clears it.
func TestLedgerKeepsAtOnceOfAnOpenTrigger(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedger(t, path)
	a := queued("a", triggers.Market, "tick a")
	a.AtOnce = true
	mustAppend(t, l, a)
	b := queued("b", triggers.Market, "tick b")
	b.AtOnce = true
	mustAppend(t, l, b)
	mustAppend(t, l, queued("c", triggers.Market, "tick c"))
	if err := l.Note(triggers.Record{At: t0.Add(time.Second), ID: "a", State: triggers.StateRunning}); err != nil {
		t.Fatal(err)
	}
	if err := l.Note(triggers.Record{At: t0.Add(2 * time.Second), ID: "a", State: triggers.StateSent, Session: "s", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, triggers.Record{At: t0.Add(3 * time.Second), ID: "b", State: triggers.StateQueued, Reason: "queued again"})
	want := map[string]bool{"a": true, "b": false, "c": false}
	check := func(l *triggers.Ledger, when string) {
		t.Helper()
		for id, atOnce := range want {
			if it, ok := l.Get(id); !ok || it.AtOnce != atOnce {
				t.Errorf("%s: Get(%s).AtOnce = %v (found %v), want %v", when, id, it.AtOnce, ok, atOnce)
			}
		}
		for _, it := range l.Unfinished() {
			if it.AtOnce != want[it.Trigger.ID] {
				t.Errorf("%s: Unfinished %s: AtOnce %v, want %v", when, it.Trigger.ID, it.AtOnce, want[it.Trigger.ID])
			}
		}
	}
	check(l, "written")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLedger(t, path)
	check(l, "reopened")
	if err := l.Compact(t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	check(l, "compacted")
	_ = l.Close()
	l = openLedger(t, path)
	check(l, "compacted and reopened")
}
