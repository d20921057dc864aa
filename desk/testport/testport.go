// Package testport gives tests a free TCP port on the loopback for a
// server that is stopped and started again on the same port (a deskd
// restarted on its config, a NATS node killed and brought back). A port
// the kernel picked (a listener on port 0) lies in its ephemeral range,
// which it also hands to every outgoing connection: once the server is
// down, any test's next connection may take the port, and the restart
// fails with "address already in use". Free picks a port below that
// range, where the kernel puts nothing by itself, and never hands a port
// out twice in one test binary: a parallel test must not take the port of
// a server that is down for its restart.
package testport

import (
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// handedOut holds every port Free has returned in this process (the
// ports of a machine are process-wide state, and so is this record of
// them): a server stopped for a restart leaves its port free, and
// another test's Free must not pick it meanwhile.
var handedOut sync.Map

// lowest is the lowest port Free picks: above the ports of well-known
// services.
const lowest = 10000

// rangeFile holds the kernel's ephemeral range, "low high".
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// Free returns a TCP port of 127.0.0.1 that nothing listens on, below the
// kernel's ephemeral range; where that range leaves no room (or cannot be
// read), a port the kernel picks.
func Free(tb testing.TB) int {
	tb.Helper()
	if top := ephemeralLow(); top > lowest+1000 {
		for range 200 {
			port := lowest + rand.IntN(top-lowest)
			if _, taken := handedOut.Load(port); taken {
				continue
			}
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				if err := l.Close(); err != nil {
					tb.Fatalf("free port %d: close: %v", port, err)
				}
				if _, taken := handedOut.LoadOrStore(port, true); !taken {
					return port
				}
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeN returns n different ports, each as Free gives it.
func FreeN(tb testing.TB, n int) []int {
	tb.Helper()
	ports := make([]int, 0, n)
	for len(ports) < n {
		if p := Free(tb); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// ephemeralLow returns the first port of the kernel's ephemeral range, or
// 0 when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}
