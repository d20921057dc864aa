package desk

import (
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// stopGrace is how long past shutdown_timeout (which the running turns
// get) a daemon's shutdown may take before its hard deadline: for cutting
// the turns short, closing the files, stopping the front end (up to 5 s)
// and draining the event log. With the default shutdown_timeout, 30 s +
// 10 s stays below systemd's TimeoutStopSec (45 s).
const stopGrace = 10 * time.Second

// frontendStop is how long the front end's in-flight requests get when it
// stops.
const frontendStop = 5 * time.Second

// maxStacks bounds the goroutine stacks logged at the shutdown deadline.
const maxStacks = 256 << 10

// goroutineStacks returns every goroutine's stack, goroutines of the same
// stack counted once, cut at maxStacks.
func goroutineStacks() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	s := b.String()
	if len(s) > maxStacks {
		s = s[:maxStacks] + "\n[cut]"
	}
	return s
}

// stopState is what the daemon is doing, for the shutdown deadline: the
// step it is in, and whether the shutdown has begun.
type stopState struct {
	mu    sync.Mutex
	step  string
	begun chan struct{} // closed when the shutdown begins
}

func newStopState() *stopState {
	return &stopState{step: "starting", begun: make(chan struct{})}
}

// Set records the step the daemon is in now.
func (s *stopState) Set(step string) {
	s.mu.Lock()
	s.step = step
	s.mu.Unlock()
}

// Step returns the step the daemon is in.
func (s *stopState) Step() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}

// Stopping records that the shutdown has begun, in step.
func (s *stopState) Stopping(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = step
	select {
	case <-s.begun:
	default:
		close(s.begun)
	}
}

// heartbeat is the main loop's proof of life for the watchdog pings: the
// loop calls Beat each time round, and the pinger asks Fresh.
type heartbeat struct {
	clk  clock.Clock
	last atomic.Pointer[time.Time] // the last Beat, on clk (with its monotonic reading, when the clock has one)
}

func newHeartbeat(clk clock.Clock) *heartbeat {
	h := &heartbeat{clk: clk}
	h.Beat()
	return h
}

// Beat records that the main loop is alive now.
func (h *heartbeat) Beat() {
	now := h.clk.Now()
	h.last.Store(&now)
}

// Fresh reports whether the last Beat was less than maxAge ago.
func (h *heartbeat) Fresh(maxAge time.Duration) bool {
	return h.clk.Now().Sub(*h.last.Load()) < maxAge
}
