package triggers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

// TestIdleLedgerIsNoFile: a ledger opened where there is none is empty
// and creates no file, makes no fsync and holds no descriptor (10,000
// idle desks' ledgers cost nothing at start); closing it leaves no file;
// its first record creates the file, fsynced into its folder, and is
// there at the next open.
func TestIdleLedgerIsNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desk", triggers.LedgerFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil { // a desk's folder
		t.Fatal(err)
	}
	for range 2 {
		fsys := &faultfs.FS{}
		l, err := triggers.OpenLedgerOn(fsys, path)
		if err != nil {
			t.Fatal(err)
		}
		if n := l.Len(); n != 0 {
			t.Errorf("a new ledger holds %d triggers, want 0", n)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Fatalf("an idle ledger opened and closed left a file (%v), want none", err)
		}
		for _, op := range []faultfs.Op{faultfs.Create, faultfs.Sync, faultfs.Write} {
			if n := fsys.Count(op); n != 0 {
				t.Errorf("an idle ledger's open and close made %d %s operations, want 0", n, op)
			}
		}
	}
	fsys := &faultfs.FS{}
	l, err := triggers.OpenLedgerOn(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(triggers.Record{At: t0, ID: "a", State: triggers.StateQueued, Trigger: &triggers.Trigger{ID: "a", Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	// The file's creation, the folder's fsync (its entry), the record's fsync.
	if c, s := fsys.Count(faultfs.Create), fsys.Count(faultfs.Sync); c != 1 || s != 2 {
		t.Errorf("the first record made %d creations and %d fsyncs, want 1 and 2 (the folder, the file)", c, s)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if it, ok := l.Get("a"); !ok || it.State != triggers.StateQueued {
		t.Errorf("after a reopen a = %+v, %v, want queued", it, ok)
	}
}
