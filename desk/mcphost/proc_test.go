package mcphost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a PID: %q", s)
	}
	return n
}

// waitExit waits up to d for the process pid (not a child of this one) to
// exit, through a pidfd that becomes readable when it does.
func waitExit(pid int, d time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll the pidfd of %d: %w", pid, err)
		}
		if n == 0 {
			return fmt.Errorf("still running after %s", d)
		}
		return nil
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func killPID(pid int) { unix.Kill(pid, unix.SIGKILL) }

func contextWithWait(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), wait)
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
