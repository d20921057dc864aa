package triggers_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

var t0 = time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC) // 09:30 IST, a Monday

// openLedger opens the ledger at path, closed when the test ends.
func openLedger(t testing.TB, path string) *triggers.Ledger {
	t.Helper()
	return openLedgerOn(t, nil, path) // nil: the operating system
}

// openLedgerOn opens the ledger at path on fsys (nil: the operating
// system), closed when the test ends.
func openLedgerOn(t testing.TB, fsys durable.FS, path string) *triggers.Ledger {
	t.Helper()
	l, err := triggers.OpenLedgerOn(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// ledgerFile writes data as a ledger file in a new folder and returns
// its path.
func ledgerFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustAppend(t *testing.T, l *triggers.Ledger, r triggers.Record) {
	t.Helper()
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
}

func queued(id string, kind triggers.Kind, text string) triggers.Record {
	tr := triggers.Trigger{ID: id, Desk: "main", Kind: kind, Text: text, At: t0}
	return triggers.Record{At: t0, ID: id, State: triggers.StateQueued, Trigger: &tr}
}

// TestLedgerReopen: every state survives a reopen, and Unfinished lists
// what a restart must deal with, in the order first recorded.
func TestLedgerReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedger(t, path)
	mustAppend(t, l, queued("a", triggers.Market, "tick a"))
	mustAppend(t, l, queued("b", triggers.Manual, "do b"))
	mustAppend(t, l, queued("c", triggers.Market, "tick c"))
	mustAppend(t, l, queued("d", triggers.Market, "tick d"))
	mustAppend(t, l, triggers.Record{At: t0, ID: "b", State: triggers.StateRunning})
	mustAppend(t, l, triggers.Record{At: t0, ID: "c", State: triggers.StateRunning})
	mustAppend(t, l, triggers.Record{At: t0, ID: "c", State: triggers.StateSent, Session: "s1", Turn: 3})
	mustAppend(t, l, triggers.Record{At: t0, ID: "d", State: triggers.StateRunning})
	mustAppend(t, l, triggers.Record{At: t0, ID: "d", State: triggers.StateSent, Session: "s1", Turn: 4})
	mustAppend(t, l, triggers.Record{At: t0.Add(time.Second), ID: "d", State: triggers.StateAnswered, Session: "s1", Turn: 4, Reply: "done d"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openLedger(t, path)
	var got []string
	for _, it := range l.Unfinished() {
		got = append(got, it.Trigger.ID+"="+string(it.State))
	}
	if want := "a=queued b=running c=sent"; strings.Join(got, " ") != want {
		t.Errorf("Unfinished = %v, want %s", got, want)
	}
	d, ok := l.Get("d")
	if !ok || d.State != triggers.StateAnswered || d.Reply != "done d" || d.Session != "s1" || d.Turn != 4 || d.Trigger.Text != "tick d" {
		t.Errorf("Get(d) = %+v, %v", d, ok)
	}
	if c, _ := l.Get("c"); c.Session != "s1" || c.Turn != 3 || c.SentAt.IsZero() {
		t.Errorf("Get(c) = %+v: want the session and turn of its sent record", c)
	}
}

// TestLedgerTornTail: a crash in the middle of a write leaves a partial
// last line; reopening cuts it off, and appends after it are whole lines.
func TestLedgerTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedger(t, path)
	mustAppend(t, l, queued("a", triggers.Market, "tick a"))
	_ = l.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"at":"2026-03-02T04:00:00Z","id":"b","sta`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	l = openLedger(t, path)
	if l.Torn() != 1 {
		t.Errorf("Torn = %d, want 1", l.Torn())
	}
	mustAppend(t, l, queued("c", triggers.Market, "tick c"))
	_ = l.Close()
	l = openLedger(t, path)
	if l.Torn() != 0 {
		t.Errorf("after the cut, Torn = %d, want 0", l.Torn())
	}
	if _, ok := l.Get("b"); ok {
		t.Error("the torn record b is in the index")
	}
	if _, ok := l.Get("c"); !ok {
		t.Error("c, appended after the cut, is lost")
	}
}

// TestLedgerMerges: a trigger that replaced another answers for it.
func TestLedgerMerges(t *testing.T) {
	l := openLedger(t, filepath.Join(t.TempDir(), triggers.LedgerFile))
	mustAppend(t, l, queued("a", triggers.Market, "NIFTY 1"))
	r := queued("b", triggers.Market, "NIFTY 2")
	r.Merges = []string{"a"}
	mustAppend(t, l, r)
	r = queued("c", triggers.Market, "NIFTY 3")
	r.Merges = []string{"b"}
	mustAppend(t, l, r)
	mustAppend(t, l, triggers.Record{At: t0, ID: "c", State: triggers.StateAnswered, Session: "s", Turn: 1, Reply: "ok"})
	own, answer, ok := l.Resolve("a")
	if !ok || own.State != triggers.StateMerged || answer.Trigger.ID != "c" || answer.Reply != "ok" {
		t.Errorf("Resolve(a) = %+v, %+v, %v; want a merged, answered by c", own, answer, ok)
	}
	if n := len(l.Unfinished()); n != 0 {
		t.Errorf("Unfinished has %d, want 0: merged triggers are not waiting", n)
	}
}

// TestLedgerSlotsAndCompaction: LastSlot follows claims and misses, and
// compaction keeps what is live, recent, or a schedule's latest slot.
func TestLedgerSlotsAndCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedger(t, path)
	old := t0.Add(-60 * 24 * time.Hour)
	for i := range 3 {
		slot := old.Add(time.Duration(i) * time.Hour)
		tr := triggers.Trigger{ID: triggers.SlotID("brief", slot), Kind: triggers.Schedule, Text: "brief"}
		mustAppend(t, l, triggers.Record{At: slot, ID: tr.ID, State: triggers.StateQueued, Trigger: &tr, Schedule: "brief", Slot: slot})
		mustAppend(t, l, triggers.Record{At: slot, ID: tr.ID, State: triggers.StateAnswered, Reply: "r"})
	}
	mustAppend(t, l, triggers.Record{At: old, ID: triggers.SlotID("brief", old.Add(5*time.Hour)), State: triggers.StateMissed,
		Schedule: "brief", Slot: old.Add(5 * time.Hour), Reason: "down"})
	r := queued("old-answered", triggers.Market, "x")
	r.At = old
	mustAppend(t, l, r)
	mustAppend(t, l, triggers.Record{At: old, ID: "old-answered", State: triggers.StateAnswered})
	mustAppend(t, l, queued("waiting", triggers.Market, "y"))
	mustAppend(t, l, queued("recent", triggers.Market, "z"))
	mustAppend(t, l, triggers.Record{At: t0, ID: "recent", State: triggers.StateAnswered, Reply: "zz"})

	if last, ok := l.LastSlot("brief"); !ok || !last.Equal(old.Add(5*time.Hour)) {
		t.Errorf("LastSlot = %v, %v", last, ok)
	}
	if err := l.Compact(t0.Add(-30 * 24 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, queued("after", triggers.Manual, "w"))
	_ = l.Close()
	l = openLedger(t, path)
	for id, want := range map[string]bool{
		"old-answered": false, triggers.SlotID("brief", old): false,
		triggers.SlotID("brief", old.Add(5*time.Hour)): true, "waiting": true, "recent": true, "after": true,
	} {
		if _, ok := l.Get(id); ok != want {
			t.Errorf("after compaction, Get(%s) found = %v, want %v", id, ok, want)
		}
	}
	if last, ok := l.LastSlot("brief"); !ok || !last.Equal(old.Add(5*time.Hour)) {
		t.Errorf("after compaction, LastSlot = %v, %v", last, ok)
	}
	if rec, _ := l.Get("recent"); rec.Reply != "zz" || rec.QueuedAt.IsZero() {
		t.Errorf("after compaction, recent = %+v", rec)
	}
	if n := l.Records(); n != 4 {
		t.Errorf("Records = %d, want 4 (3 kept + 1 appended)", n)
	}
}

// TestLedgerChanged: Changed is closed by the next Append.
func TestLedgerChanged(t *testing.T) {
	l := openLedger(t, filepath.Join(t.TempDir(), triggers.LedgerFile))
	ch := l.Changed()
	select {
	case <-ch:
		t.Fatal("Changed is closed before any Append")
	default:
	}
	mustAppend(t, l, queued("a", triggers.Market, "x"))
	select {
	case <-ch:
	default:
		t.Fatal("Changed is open after an Append")
	}
}

// TestLedgerFullDisk is the repro of a lost trigger: the disk fills, an
// append fails half way, the disk frees, trigger B is acknowledged. B must
// survive a reopen (the half record is cut back at once, never glued to B).
func TestLedgerFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	ffs := &faultfs.FS{}
	l, err := triggers.OpenLedgerOn(ffs, path)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, queued("a", triggers.Market, "tick a"))
	ffs.Fill(faultfs.ErrNoSpace)
	if err := l.Append(queued("x", triggers.Market, "refused on a full disk")); !durable.IsDiskFull(err) {
		t.Fatalf("Append on a full disk = %v, want a disk-full error", err)
	}
	if _, ok := l.Get("x"); ok {
		t.Error("the refused record x is in the index")
	}
	ffs.Free()
	mustAppend(t, l, queued("b", triggers.Market, "tick b"))
	_ = l.Close()

	l = openLedger(t, path)
	if _, ok := l.Get("b"); !ok {
		t.Fatal("trigger b, acknowledged after the disk freed, is lost")
	}
	if _, ok := l.Get("x"); ok {
		t.Error("the refused trigger x is in the ledger after a reopen")
	}
	if n := l.Torn(); n != 0 {
		t.Errorf("Torn = %d after a reopen, want 0: the failed write was cut back", n)
	}
}

// TestLedgerRecoversGluedRecord: a ledger damaged by an older deskd, which
// did not cut a failed write back (half a record with the next one glued
// on), gives the glued record back and reports the damage.
func TestLedgerRecoversGluedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	const damaged = `{"at":"2026-03-02T04:00:00Z","id":"a","state":"queued"}` + "\n" +
		`{"at":"2026-03-02T04:00:01Z","id":"x","sta` +
		`{"at":"2026-03-02T04:00:02Z","id":"b","state":"queued"}` + "\n"
	if err := os.WriteFile(path, []byte(damaged), 0o640); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, path)
	if _, ok := l.Get("b"); !ok {
		t.Error("the record glued onto half of x is lost")
	}
	torn, skipped := l.Damage()
	if torn != nil || len(skipped) != 1 || skipped[0].Offset == 0 {
		t.Errorf("Damage() = %+v, %+v; want one skipped half record", torn, skipped)
	}
}

// TestLedgerTornTailSetAside: the torn tail is kept in a file next to the
// ledger, not dropped.
func TestLedgerTornTailSetAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	const frag = `{"at":"2026-03-02T04:00:01Z","id":"x","sta`
	if err := os.WriteFile(path, []byte(`{"at":"2026-03-02T04:00:00Z","id":"a","state":"queued"}`+"\n"+frag), 0o640); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, path)
	torn, _ := l.Damage()
	if torn == nil {
		t.Fatal("Damage() reports no torn tail")
	}
	if b, err := os.ReadFile(torn.SavedTo); err != nil || string(b) != frag {
		t.Errorf("%s = %q (%v), want the fragment", torn.SavedTo, b, err)
	}
}
