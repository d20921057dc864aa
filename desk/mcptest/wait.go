package mcptest

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit waits up to d for the process pid (not a child of the caller:
// a server a deskd started) to exit, through a pidfd that becomes
// readable when it does; a process already gone is no error.
func WaitExit(pid int, d time.Duration) error {
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
			return fmt.Errorf("process %d still runs after %s", pid, d)
		}
		return nil
	}
}
