package memory_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

// stepClock returns a clock that starts at start and moves on by step at
// every call.
func stepClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := now
		now = now.Add(step)
		return t
	}
}

func newFolder(t testing.TB) *memory.Folder {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "desks", "alpha")
	f, err := memory.OpenFolder(dir, "alpha", stepClock(utc("2025-01-02T03:04:05.000000006Z"), time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}

// tempFiles returns the names under dir that look like leftover temp files.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".tmp") {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
