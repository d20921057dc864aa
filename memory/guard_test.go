package memory_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

func TestFoldGuard(t *testing.T) {
	before := "# Lessons\n\n- one\n- two\n- three\n- four\n"
	tests := []struct {
		name   string
		guard  memory.FoldGuard
		after  string
		refuse string // "" = accepted
	}{
		{"adds", memory.FoldGuard{}, before + "- five\n", ""},
		{"keeps three of four", memory.FoldGuard{}, "- one\n- two\n- three\n- five\n", ""},
		{"drops most", memory.FoldGuard{}, "- one\n- five\n", "keeps 1 of 4 prior entries"},
		{"empty", memory.FoldGuard{}, "  \n", "empty"},
		{"too large", memory.FoldGuard{MaxBytes: 20}, before + "- five\n", "more than the cap of 20"},
		{"looser setting", memory.FoldGuard{MinKept: 0.25}, "- one\n- five\n", ""},
		{"list markers and headings do not count", memory.FoldGuard{}, "## New heading\n* one\n+ two\nthree\nfour\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.guard.Check(before, tt.after)
			var re *memory.RefusedError
			switch {
			case tt.refuse == "" && err != nil:
				t.Fatalf("Check refused: %v", err)
			case tt.refuse != "" && !errors.As(err, &re):
				t.Fatalf("Check = %v, want a refusal with %q", err, tt.refuse)
			case tt.refuse != "" && !strings.Contains(re.Reason, tt.refuse):
				t.Fatalf("refusal %q does not say %q", re.Reason, tt.refuse)
			}
		})
	}
	if err := (memory.FoldGuard{}).Check("", "- first lesson\n"); err != nil {
		t.Errorf("a first Memory.md was refused: %v", err)
	}
}

func TestReplaceMemoryIsCompareAndSwap(t *testing.T) {
	clock := time.Date(2026, 3, 1, 18, 30, 0, 0, time.UTC)
	f, err := memory.OpenFolder(t.TempDir(), "main", func() time.Time { clock = clock.Add(time.Second); return clock })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReplaceMemory("", "v1\n"); err != nil {
		t.Fatalf("first replace: %v", err)
	}
	if _, err := f.WriteMemory("operator edit\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReplaceMemory("v1\n", "v2\n"); !errors.Is(err, memory.ErrMemoryChanged) {
		t.Fatalf("replace over an operator's edit = %v, want ErrMemoryChanged", err)
	}
	if got, _ := f.ReadMemory(); got != "operator edit\n" {
		t.Fatalf("Memory.md = %q after a refused replace", got)
	}
	hist, err := f.ReplaceMemory("operator edit\n", "v3\n")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(hist); err != nil || string(b) != "operator edit\n" {
		t.Fatalf("history %s = %q, %v", hist, b, err)
	}

	versions, err := f.MemoryHistory()
	if err != nil || len(versions) != 2 {
		t.Fatalf("MemoryHistory = %v, %v; want 2 versions", versions, err)
	}
	if _, _, err := f.RestoreMemory(versions[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.ReadMemory(); got != "v1\n" {
		t.Fatalf("after restore of %s Memory.md = %q, want v1", versions[0].ID, got)
	}
	if versions, _ := f.MemoryHistory(); len(versions) != 3 {
		t.Fatalf("the restore did not keep the replaced version: %d versions", len(versions))
	}
	if _, err := f.ReadMemoryVersion("../state"); err == nil {
		t.Fatal("a path outside history was accepted as a version id")
	}
}
