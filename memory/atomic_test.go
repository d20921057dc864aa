package memory_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

func TestWriteFileAtomic(t *testing.T) {
	tests := []struct {
		name   string
		before *string // nil: no file
		data   string
		perm   os.FileMode
	}{
		{"new file", nil, "hello\n", 0o640},
		{"replace", ptr("old content that is longer\n"), "new\n", 0o600},
		{"empty", ptr("x"), "", 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.txt")
			if tt.before != nil {
				writeFile(t, path, *tt.before)
			}
			if err := memory.WriteFileAtomic(path, []byte(tt.data), tt.perm); err != nil {
				t.Fatal(err)
			}
			if got := memorytest.ReadFile(t, path); got != tt.data {
				t.Errorf("content = %q, want %q", got, tt.data)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tt.perm {
				t.Errorf("perm = %v, want %v", fi.Mode().Perm(), tt.perm)
			}
			if names := memorytest.DirNames(t, dir); len(names) != 1 || names[0] != "f.txt" {
				t.Errorf("dir holds %v, want only f.txt", names)
			}
		})
	}
}

func TestWriteFileAtomicErrorLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// The target is a directory: the rename fails, the temp file must go.
	target := filepath.Join(dir, "sub")
	if err := os.Mkdir(target, 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(target, "keep"), "x")
	err := memory.WriteFileAtomic(target, []byte("data"), 0o640)
	if err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(err.Error(), target) {
		t.Errorf("error %q does not name %s", err, target)
	}
	if names := memorytest.DirNames(t, dir); len(names) != 1 || names[0] != "sub" {
		t.Errorf("dir holds %v, want only sub", names)
	}
	// A missing directory is an error too.
	err = memory.WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil, 0o640)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestRemoveStaleTemps(t *testing.T) {
	f := newFolder(t)
	stale := []string{
		f.Path(".Memory.md.tmp-123"),
		f.Path("summaries/.2025-01-01.md.tmp-9"),
		f.Path("history/memory/.x.md.tmp-1"),
	}
	keep := []string{f.Path("Memory.md"), f.Path("notes/2025-01-01.md"), f.Path("notes/.hidden")}
	for _, p := range append(append([]string{}, stale...), keep...) {
		writeFile(t, p, "x")
	}
	removed, err := f.RemoveStaleTemps()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != len(stale) {
		t.Errorf("removed %v, want %v", removed, stale)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
