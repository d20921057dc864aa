package triggers_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// TestLedgerKeepsTheBootOfAnOpenTrigger: the boot a queued record names
// (Record.Boot) is what Get and Unfinished say of its trigger through its
// running and sent records, a reopen (with and without the index Close
// leaves) and a compaction; a later queued record without one (a trigger
// queued again) clears it.
func TestLedgerKeepsTheBootOfAnOpenTrigger(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedger(t, path)
	a := queued("a", triggers.Market, "tick a")
	a.Boot = "boot-1"
	mustAppend(t, l, a)
	b := queued("b", triggers.Market, "tick b")
	b.Boot = "boot-1"
	mustAppend(t, l, b)
	mustAppend(t, l, queued("c", triggers.Market, "tick c"))
	if err := l.Note(triggers.Record{At: t0.Add(time.Second), ID: "a", State: triggers.StateRunning}); err != nil {
		t.Fatal(err)
	}
	if err := l.Note(triggers.Record{At: t0.Add(2 * time.Second), ID: "a", State: triggers.StateSent, Session: "s", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, triggers.Record{At: t0.Add(3 * time.Second), ID: "b", State: triggers.StateQueued, Reason: "queued again"})
	want := map[string]string{"a": "boot-1", "b": "", "c": ""}
	check := func(l *triggers.Ledger, when string) {
		t.Helper()
		for id, boot := range want {
			if it, ok := l.Get(id); !ok || it.Boot != boot {
				t.Errorf("%s: Get(%s).Boot = %q (found %v), want %q", when, id, it.Boot, ok, boot)
			}
		}
		for _, it := range l.Unfinished() {
			if it.Boot != want[it.Trigger.ID] {
				t.Errorf("%s: Unfinished %s: Boot %q, want %q", when, it.Trigger.ID, it.Boot, want[it.Trigger.ID])
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
