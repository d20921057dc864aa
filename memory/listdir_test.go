package memory_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
)

// TestListDir: the entries of a folder by name, none for a missing one,
// and an error naming what was listed for a path that is not a folder.
func TestListDir(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.md", "a.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := memory.ListDir(dir, "notes")
	if err != nil || len(entries) != 2 || entries[0].Name() != "a.md" || entries[1].Name() != "b.md" {
		t.Fatalf("ListDir = %v, %v; want a.md, b.md", entries, err)
	}
	if entries, err := memory.ListDir(filepath.Join(dir, "missing"), "notes"); err != nil || entries != nil {
		t.Fatalf("ListDir(missing) = %v, %v; want none and no error", entries, err)
	}
	file := filepath.Join(dir, "a.md")
	_, err = memory.ListDir(file, "notes")
	if err == nil || !strings.HasPrefix(err.Error(), "list notes "+file+": ") {
		t.Fatalf("ListDir(a file) = %v; want an error \"list notes %s: ...\"", err, file)
	}
}
