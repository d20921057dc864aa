package testport_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deskd/deskd/desk/testport"
)

// TestFreePortIsBelowTheEphemeralRange: the port is free (a listener
// takes it) and lies below the kernel's ephemeral range, so that no
// outgoing connection takes it while a server restarts on it.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to check against: %v", err)
	}
	low, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatalf("read the ephemeral range %q: %v", b, err)
	}
	for range 20 {
		port := testport.Free(t)
		if low > 11000 && (port < 10000 || port >= low) {
			t.Errorf("Free = %d, want a port from 10000 to below the ephemeral range's %d", port, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("Free = %d, which cannot be listened on: %v", port, err)
		}
		l.Close()
	}
}

// TestFreeNGivesDifferentPorts: FreeN's ports are n, all different.
func TestFreeNGivesDifferentPorts(t *testing.T) {
	ports := testport.FreeN(t, 6)
	seen := map[int]bool{}
	for _, p := range ports {
		seen[p] = true
	}
	if len(ports) != 6 || len(seen) != 6 {
		t.Errorf("FreeN(6) = %v, want six different ports", ports)
	}
}

// TestFreeNeverHandsAPortOutTwice: a port Free returned is not returned
// again while nothing listens on it (a server down for its restart),
// across many calls from parallel goroutines.
func TestFreeNeverHandsAPortOutTwice(t *testing.T) {
	const calls = 400
	ports := make(chan int, calls)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range calls / 8 {
				ports <- testport.Free(t)
			}
		})
	}
	wg.Wait()
	close(ports)
	seen := map[int]bool{}
	for p := range ports {
		if seen[p] {
			t.Errorf("Free returned port %d twice", p)
		}
		seen[p] = true
	}
}
