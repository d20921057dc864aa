package triggers_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

// TestLedgerCloseWritesOnlyWhatIsNew: a ledger closes without a write or
// an fsync when it is empty, or has nothing new since its open from its
// persisted index (an idle desk's); with records written without their
// fsync (Note) it makes them durable and writes its index, which the next
// open uses.
func TestLedgerCloseWritesOnlyWhatIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	t0 := time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)
	closeCounting := func(l *triggers.Ledger, fsys *faultfs.FS) (syncs, writes int) {
		t.Helper()
		s, w := fsys.Count(faultfs.Sync), fsys.Count(faultfs.Write)+fsys.Count(faultfs.Create)+fsys.Count(faultfs.Rename)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return fsys.Count(faultfs.Sync) - s, fsys.Count(faultfs.Write) + fsys.Count(faultfs.Create) + fsys.Count(faultfs.Rename) - w
	}
	open := func() (*triggers.Ledger, *faultfs.FS) {
		t.Helper()
		fsys := &faultfs.FS{}
		l, err := triggers.OpenLedgerOn(fsys, path)
		if err != nil {
			t.Fatal(err)
		}
		return l, fsys
	}

	l, fsys := open()
	if s, w := closeCounting(l, fsys); s != 0 || w != 0 {
		t.Errorf("an empty ledger's Close made %d fsyncs and %d writes, want none", s, w)
	}
	l, fsys = open()
	if err := l.Append(triggers.Record{At: t0, ID: "a", State: triggers.StateQueued, Trigger: &triggers.Trigger{ID: "a", Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Note(triggers.Record{At: t0, ID: "a", State: triggers.StateRunning}); err != nil {
		t.Fatal(err)
	}
	if s, _ := closeCounting(l, fsys); s == 0 {
		t.Error("Close after a Note made no fsync: the noted record is not durable")
	}
	if _, err := os.Stat(path + triggers.IndexSuffix); err != nil {
		t.Errorf("Close with records wrote no persisted index: %v", err)
	}
	l, fsys = open() // from its index, nothing new
	if s, w := closeCounting(l, fsys); s != 0 || w != 0 {
		t.Errorf("an idle ledger's Close made %d fsyncs and %d writes, want none", s, w)
	}
	l, _ = open()
	if it, ok := l.Get("a"); !ok || it.State != triggers.StateRunning {
		t.Errorf("a after the closes = %+v, %v; want it running", it, ok)
	}
	_ = l.Close()
}
