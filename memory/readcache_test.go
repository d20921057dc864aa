package memory_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestReadMemorySeesEveryChange: Memory.md is read again only when a stat
// says it changed, and every change is seen: an edit of the same size
// right after a read (inside the file clock's tick), an edit of the same
// size whose modification time is set back to the old one (its change
// time moves), an atomic replacement, and a removal.
func TestReadMemorySeesEveryChange(t *testing.T) {
	f := newFolder(t)
	path := f.Path(memory.MemoryFile)
	read := func(want string) {
		t.Helper()
		got, err := f.ReadMemory()
		if err != nil || got != want {
			t.Fatalf("ReadMemory = %q, %v; want %q", got, err, want)
		}
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("lesson A")
	read("lesson A")
	write("lesson B") // the same size, at once
	read("lesson B")

	// Old enough to be kept: a change that keeps size and modification
	// time is still seen (the change time moves).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	read("lesson B")
	read("lesson B")
	write("lesson C")
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	read("lesson C")

	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("lesson D"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	read("lesson D")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	read("")
}

// TestPromptFilesThatAreNotFilesAreRefused: a FIFO (or any file that is not
// a regular file) in place of Memory.md or a SKILL.md is refused at once,
// with an error naming it, instead of a read that waits for a writer for
// ever; a file over MaxPromptFile is refused too.
func TestPromptFilesThatAreNotFilesAreRefused(t *testing.T) {
	f := newFolder(t)
	faultfs.Mkfifo(t, f.Path(memory.MemoryFile))
	_, err := f.ReadMemory()
	if !errors.Is(err, durable.ErrNotRegular) || !strings.Contains(err.Error(), f.Path(memory.MemoryFile)) {
		t.Errorf("ReadMemory of a FIFO = %v, want a refusal naming the file", err)
	}

	skill := filepath.Join(f.Path(memory.SkillsDir), "tape")
	if err := os.MkdirAll(skill, 0o750); err != nil {
		t.Fatal(err)
	}
	faultfs.Mkfifo(t, filepath.Join(skill, memory.SkillFile))
	if _, err := f.Skills(); !errors.Is(err, durable.ErrNotRegular) {
		t.Errorf("Skills with a FIFO SKILL.md = %v, want a refusal", err)
	}

	if err := os.Remove(f.Path(memory.MemoryFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Path(memory.MemoryFile), make([]byte, memory.MaxPromptFile+1), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadMemory(); !errors.Is(err, durable.ErrTooLarge) {
		t.Errorf("ReadMemory of a file over MaxPromptFile = %v, want ErrTooLarge", err)
	}
}

// BenchmarkReadMemory: what a model call pays to put Memory.md in its
// prompt, for a file that has not changed (a stat) and, as a reference,
// for one read whole (os.ReadFile).
func BenchmarkReadMemory(b *testing.B) {
	dir := b.TempDir()
	f, err := memory.OpenFolder(dir, "main", time.Now)
	if err != nil {
		b.Fatal(err)
	}
	path := f.Path(memory.MemoryFile)
	if err := os.WriteFile(path, []byte(strings.Repeat("- a lasting lesson of the desk\n", 1000)), 0o640); err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		b.Fatal(err)
	}
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.ReadMemory(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
