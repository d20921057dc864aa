package faultfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mkfifo makes a named pipe at path (and its folder) for a test of what a
// reader does with one. When the test ends, the cleanup opens the pipe for
// writing without blocking, which lets go a reader still blocked opening
// it: a regression then fails the test instead of hanging it.
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
}
