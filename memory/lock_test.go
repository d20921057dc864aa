package memory_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

func TestLockStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state") // created by LockStateDir
	now := utc("2025-01-02T03:04:05Z")
	first, err := memory.LockStateDir(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "deskd.lock")
	if first.Path() != path {
		t.Errorf("Path = %s", first.Path())
	}
	holder := strings.TrimSpace(memorytest.ReadFile(t, path))
	wantPrefix := fmt.Sprintf("pid %d on ", os.Getpid())
	if !strings.HasPrefix(holder, wantPrefix) || !strings.HasSuffix(holder, " since 2025-01-02T03:04:05Z") {
		t.Errorf("holder = %q", holder)
	}

	// flock excludes across open file descriptions, even in one process.
	for range 2 {
		second, err := memory.LockStateDir(dir, now)
		var locked *memory.LockedError
		if !errors.As(err, &locked) {
			if second != nil {
				second.Release()
			}
			t.Fatalf("second lock: err = %v, want *LockedError", err)
		}
		if locked.Path != path || locked.Holder != holder {
			t.Errorf("LockedError = %+v", *locked)
		}
		want := fmt.Sprintf("state dir %s is in use by another deskd (%s)", dir, holder)
		if err.Error() != want {
			t.Errorf("Error() = %q, want %q", err.Error(), want)
		}
		if !strings.Contains(err.Error(), wantPrefix) {
			t.Errorf("error %q does not name the pid", err)
		}
		// A failed attempt must not disturb the holder line.
		if got := strings.TrimSpace(memorytest.ReadFile(t, path)); got != holder {
			t.Errorf("holder changed to %q", got)
		}
	}

	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if got, err := os.ReadFile(path); err != nil || len(got) != 0 {
		t.Errorf("after Release the lock file holds %q, %v; want it kept and empty", got, err)
	}
	again, err := memory.LockStateDir(dir, now.Add(1))
	if err != nil {
		t.Fatalf("lock after Release: %v", err)
	}
	defer again.Release()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestLockedErrorUnknownHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := memory.LockStateDir(dir, utc("2025-01-02T03:04:05Z"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	// Empty the holder line (as a holder that crashed before writing it would leave it).
	if err := os.Truncate(filepath.Join(dir, "deskd.lock"), 0); err != nil {
		t.Fatal(err)
	}
	_, err = memory.LockStateDir(dir, utc("2025-01-02T03:04:05Z"))
	var locked *memory.LockedError
	if !errors.As(err, &locked) || locked.Holder != "unknown holder" {
		t.Fatalf("err = %v, want *LockedError with unknown holder", err)
	}
	if want := "state dir " + dir + " is in use by another deskd (unknown holder)"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
