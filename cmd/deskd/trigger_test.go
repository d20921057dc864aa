package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestClientWaitTimeout: --wait exits 4 when the timeout passes before
// the trigger is answered.
func TestClientWaitTimeout(t *testing.T) {
	g := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: g})
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"trigger", "main", "slow", "--wait", "--timeout", "1ms", "--addr", h.URL()}, &out, &errb)
	}()
	g.Expect(t, "slow")
	// The server's long poll waits on deskd's (fake) clock.
	var code int
	for waiting := true; waiting; {
		select {
		case code = <-done:
			waiting = false
		case <-time.After(10 * time.Millisecond):
			h.Clock.Advance(time.Second)
		}
	}
	if code != exitTimeout || !strings.Contains(errb.String(), "still running") {
		t.Errorf("trigger --wait --timeout 1ms = %d %s%s", code, out.String(), errb.String())
	}
	g.Release <- struct{}{}
}
