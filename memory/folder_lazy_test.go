package memory_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestLazyFolderIsMadeByItsFirstWrite: OpenFolderLazily of a desk folder
// not made yet creates nothing (an idle desk's first start, issue 24 item
// 4); it reads as empty (no state, no session, no stale temp file); its
// first write makes the desk folder and the folder written into, each
// fsynced into its parent, and the file is there. A file where the folder
// should be is refused, naming the path.
func TestLazyFolderIsMadeByItsFirstWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desks", "main")
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := memory.OpenFolderLazily(dir, "main", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	fsys := &faultfs.FS{}
	f.FS = fsys
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenFolderLazily made the folder (%v)", err)
	}
	if _, ok, err := f.ReadState(); ok || err != nil {
		t.Errorf("ReadState of a folder not made = %v, %v; want none, no error", ok, err)
	}
	if ids, err := f.SessionIDs(); len(ids) != 0 || err != nil {
		t.Errorf("SessionIDs of a folder not made = %v, %v; want none", ids, err)
	}
	if stale, err := f.RemoveStaleTemps(); len(stale) != 0 || err != nil {
		t.Errorf("RemoveStaleTemps of a folder not made = %v, %v; want none", stale, err)
	}
	if n := fsys.Count(faultfs.Create) + fsys.Count(faultfs.Sync); n != 0 {
		t.Errorf("reading a folder not made made %d creations and fsyncs, want none", n)
	}

	if err := f.WriteJSON(memory.StateFile, memory.State{Session: "s1"}); err != nil {
		t.Fatalf("the first write: %v", err)
	}
	if st, ok, err := f.ReadState(); !ok || err != nil || st.Session != "s1" {
		t.Errorf("after the first write ReadState = %+v, %v, %v", st, ok, err)
	}
	// The desk folder (fsync of desks/), the temp file (its fsync), the
	// rename (fsync of the desk folder).
	if c, s := fsys.Count(faultfs.Create), fsys.Count(faultfs.Sync); c != 2 || s != 3 {
		t.Errorf("the first write made %d creations and %d fsyncs, want 2 and 3 (the folder into desks/, the file, its rename)", c, s)
	}

	log, err := f.CreateSession(memory.Record{Session: "s1", Date: "2026-03-02"})
	if err != nil {
		t.Fatalf("the first session: %v", err)
	}
	_ = log.Close()
	if _, err := os.Stat(f.SessionPath("s1")); err != nil {
		t.Errorf("the first session's file: %v", err)
	}

	file := filepath.Join(filepath.Dir(dir), "other")
	if err := os.WriteFile(file, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = memory.OpenFolderLazily(file, "other", time.Now)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != file || !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("OpenFolderLazily of a file = %v, want a path error naming %s (not a folder)", err, file)
	}
}
