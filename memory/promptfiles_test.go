package memory_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

// TestHeldPromptFilesSeeDeskdsWritesAtOnce: while held, ReadMemory checks
// Memory.md for an outside edit once (its first call), yet sees deskd's
// own write at once; after the hold, the outside edit is seen.
func TestHeldPromptFilesSeeDeskdsWritesAtOnce(t *testing.T) {
	f, err := memory.OpenFolder(filepath.Join(t.TempDir(), "main"), "main", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	path := f.Path(memory.MemoryFile)
	settle := func() {
		t.Helper()
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	read := func(want string) {
		t.Helper()
		if got, err := f.ReadMemory(); err != nil || got != want {
			t.Fatalf("ReadMemory = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := f.WriteMemory("one"); err != nil {
		t.Fatal(err)
	}
	settle()
	release := f.HoldPromptFiles()
	read("one")
	before := f.PromptStats()
	read("one")
	if s := f.PromptStats(); s.Looks != before.Looks || s.Reads != before.Reads || s.Kept != before.Kept+1 {
		t.Errorf("a second read in the hold: %+v after %+v, want no stat, no read, one kept", s, before)
	}
	if err := os.WriteFile(path, []byte("two"), 0o640); err != nil { // an operator's edit
		t.Fatal(err)
	}
	settle()
	read("one") // checked once in the hold already
	if _, err := f.WriteMemory("three"); err != nil {
		t.Fatal(err)
	}
	read("three") // deskd's write, at once
	if err := os.WriteFile(path, []byte("four!"), 0o640); err != nil {
		t.Fatal(err)
	}
	settle()
	release()
	read("four!")
	before = f.PromptStats()
	read("four!")
	if s := f.PromptStats(); s.Reads != before.Reads || s.Looks != before.Looks+1 {
		t.Errorf("an unchanged Memory.md outside a hold: %+v after %+v, want one stat and no read", s, before)
	}
}
