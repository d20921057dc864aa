package memory_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/memory/memorytest"
)

// TestFirstWriteMakesItsFolder: a desk folder just opened holds none of
// its folders (OpenFolder makes none: an idle desk's start costs no
// mkdir); the first write into each makes it, and fsyncs its creation
// into the desk folder before the write is reported done: when that
// fsync fails, so does the write, and the next one makes it again.
func TestFirstWriteMakesItsFolder(t *testing.T) {
	day := memory.Date{Year: 2026, Month: 3, Day: 2}
	writes := []struct {
		folder string
		write  func(f *memory.Folder) error
	}{
		{memory.NotesDir, func(f *memory.Folder) error { return f.AppendNote(day, "bought the dip") }},
		{memory.SummariesDir, func(f *memory.Folder) error { _, err := f.WriteSummary(day, "a quiet day\n"); return err }},
		{memory.SessionsDir, func(f *memory.Folder) error {
			s, err := f.CreateSession(memory.Record{Session: "s1", Date: day.String()})
			if err == nil {
				err = s.Close()
			}
			return err
		}},
		{memory.SkillsDir, func(f *memory.Folder) error {
			_, err := f.WriteSkill("scalp", "---\nname: scalp\ndescription: quick ones\n---\nBuy low.\n")
			return err
		}},
		{memory.HistoryDir, func(f *memory.Folder) error {
			// Memory.md "one" is there (below): this keeps it under
			// history/memory/ before writing Memory.md.
			_, err := f.WriteMemory("two\n")
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.folder, func(t *testing.T) {
			f := newFolder(t)
			if _, err := os.Stat(f.Path(w.folder)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a desk folder just opened has %s/ (%v), want none", w.folder, err)
			}
			if w.folder == memory.HistoryDir {
				if err := os.WriteFile(f.Path(memory.MemoryFile), []byte("one\n"), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			fsys := &faultfs.FS{}
			f.FS = fsys
			fsys.FailAt(faultfs.Sync, 1, faultfs.ErrIO) // the desk folder's, for the new folder's entry
			if err := w.write(f); !errors.Is(err, faultfs.ErrIO) {
				t.Fatalf("the first write into %s/ with the desk folder's fsync failing = %v, want %v", w.folder, err, faultfs.ErrIO)
			}
			// The folder was made, but its entry may not be durable: the
			// next write must fsync it again.
			if err := os.RemoveAll(f.Path(w.folder)); err != nil {
				t.Fatal(err)
			}
			before := fsys.Count(faultfs.Sync)
			if err := w.write(f); err != nil {
				t.Fatalf("the first write into %s/: %v", w.folder, err)
			}
			if fi, err := os.Stat(f.Path(w.folder)); err != nil || !fi.IsDir() {
				t.Fatalf("after the first write into it, %s/ is %v, %v", w.folder, fi, err)
			}
			if fsys.Count(faultfs.Sync) == before {
				t.Errorf("the first write into %s/ made no fsync", w.folder)
			}
			if got := memorytest.DirNames(t, filepath.Join(f.Dir(), w.folder)); len(got) == 0 {
				t.Errorf("%s/ is empty after a write into it", w.folder)
			}
		})
	}
}
