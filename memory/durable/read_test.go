package durable_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// readRegular calls ReadRegular in a goroutine and fails the test if it
// has not returned within 10s: a read that blocks (on a FIFO, say) fails
// the test rather than hanging it.
func readRegular(t *testing.T, path string, limit int64, links durable.Links) ([]byte, error) {
	t.Helper()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := durable.ReadRegular(path, limit, links)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("ReadRegular(%s) has not returned after 10s: it blocks", path)
		return nil, nil
	}
}

// refused checks that err is a *RefusedError wrapping want whose reason
// holds reason.
func refused(t *testing.T, what string, err, want error, reason string) {
	t.Helper()
	var re *durable.RefusedError
	if !errors.As(err, &re) || !errors.Is(err, want) || !strings.Contains(re.Reason, reason) {
		t.Errorf("%s: err = %v, want a refusal (%v) saying %q", what, err, want, reason)
	}
}

// TestReadRegular: a regular file is read, through a link only with
// Follow; anything else is refused at once with its type named, and
// nothing waits on a FIFO.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.json")
	if err := os.WriteFile(file, []byte(`{"text": "hi"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	linkToFIFO := filepath.Join(dir, "link-fifo.json")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "sock") // short: a socket's path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s.json")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })

	if data, err := readRegular(t, file, 100, durable.NoFollow); err != nil || string(data) != `{"text": "hi"}` {
		t.Errorf("regular file: %q, %v", data, err)
	}
	if data, err := readRegular(t, link, 100, durable.Follow); err != nil || string(data) != `{"text": "hi"}` {
		t.Errorf("link with Follow: %q, %v", data, err)
	}
	for _, tt := range []struct {
		name   string
		path   string
		links  durable.Links
		reason string
	}{
		{"FIFO", fifo, durable.NoFollow, "a named pipe (FIFO), not a regular file"},
		{"FIFO with Follow", fifo, durable.Follow, "a named pipe (FIFO)"},
		{"link, NoFollow", link, durable.NoFollow, "a symbolic link (not followed)"},
		{"link to a FIFO, Follow", linkToFIFO, durable.Follow, "a named pipe (FIFO)"},
		{"link to a FIFO, NoFollow", linkToFIFO, durable.NoFollow, "a symbolic link"},
		{"folder", dir, durable.Follow, "a folder"},
		{"device", os.DevNull, durable.Follow, "a character device"},
		{"socket", sock, durable.NoFollow, "a socket"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := readRegular(t, tt.path, 100, tt.links)
			refused(t, tt.name, err, durable.ErrNotRegular, tt.reason)
			if data != nil {
				t.Errorf("%s: read %q", tt.name, data)
			}
		})
	}
	if _, err := readRegular(t, filepath.Join(dir, "missing.json"), 100, durable.NoFollow); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadRegularLimit: a file over the limit is refused from its size,
// before a byte is read (a sparse 1 GiB file), and a file whose size says
// less than it holds (a /proc file says 0) is refused after limit+1 bytes.
func TestReadRegularLimit(t *testing.T) {
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact.json")
	if err := os.WriteFile(exact, []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := readRegular(t, exact, 100, durable.NoFollow); err != nil || len(data) != 100 {
		t.Errorf("a file of exactly the limit: %d bytes, %v", len(data), err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = readRegular(t, big, 100, durable.NoFollow)
	refused(t, "1 GiB file", err, durable.ErrTooLarge, "larger than 100 bytes")

	// The kernel makes /proc/self/status as it is read; its size is 0.
	if fi, err := os.Stat("/proc/self/status"); err != nil || fi.Size() != 0 {
		t.Skipf("no /proc/self/status of size 0 (%v)", err)
	}
	data, err := readRegular(t, "/proc/self/status", 10, durable.Follow)
	refused(t, "/proc/self/status, limit 10", err, durable.ErrTooLarge, "larger than 10 bytes")
	if data != nil {
		t.Errorf("read %q past the limit", data)
	}
}
