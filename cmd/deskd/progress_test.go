package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// lockedBuffer is a buffer that the command writes while the test reads
// it; changed is signalled at each write.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{changed: make(chan struct{}, 1)} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits (up to 10 s) until the buffer holds want.
func (l *lockedBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(l.String(), want) {
		select {
		case <-l.changed:
		case <-deadline:
			t.Fatalf("stderr has no %q:\n%s", want, l.String())
		}
	}
}

// passFirstWait waits until the POST of deskd trigger --wait waits on
// deskd's clock (firstWait) and moves the clock past it: deskd answers
// 202, and the command watches the trigger from there.
func passFirstWait(t *testing.T, h *httpapitest.Harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.Clock.WaitTimerAt(ctx, h.Clock.Now().Add(firstWait)); err != nil {
		t.Fatalf("the POST's wait of %s is not armed on deskd's clock: %v", firstWait, err)
	}
	h.Clock.Advance(firstWait)
}

// TestTriggerWaitShowsProgress: deskd trigger --wait, once its POST's wait
// has passed (202), prints each change of the trigger's state on stderr, once (queued and where, running and its
// phase, answered), and only the answer on stdout.
func TestTriggerWaitShowsProgress(t *testing.T) {
	g := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: g})
	var first bytes.Buffer
	if code := run(t.Context(), []string{"trigger", "main", "first", "--id", "w1", "--addr", h.URL()}, &first, &first); code != 0 {
		t.Fatalf("trigger w1 = %d %s", code, first.String())
	}
	g.Expect(t, "first")
	var out bytes.Buffer
	errb := newLockedBuffer()
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"trigger", "main", "second", "--id", "w2", "--wait", "--timeout", "30s", "--addr", h.URL()}, &out, errb)
	}()
	passFirstWait(t, h) // the POST's own wait: then the watch, and its progress
	errb.waitFor(t, "w2: queued (position 1 of 1)\n")
	g.Release <- struct{}{}
	g.Expect(t, "second")
	errb.waitFor(t, "w2: running (model)\n")
	g.Release <- struct{}{}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("trigger --wait = %d %s%s", code, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("trigger --wait did not end")
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) < 3 || lines[0] != "w2: queued (position 1 of 1)" || !strings.HasPrefix(lines[len(lines)-1], "w2: answered, session ") {
		t.Errorf("stderr:\n%s\nwant queued first, answered last", errb.String())
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Errorf("stderr repeats %q:\n%s", l, errb.String())
		}
		seen[l] = true
	}
	if strings.Contains(out.String(), "queued") || !strings.Contains(out.String(), "answered") {
		t.Errorf("stdout = %q, want only the outcome", out.String())
	}
}

// TestTriggerWaitOnAPausedDesk: on a paused desk --wait, once its POST's
// wait has passed, says who paused it and that the trigger waits until the desk is resumed.
func TestTriggerWaitOnAPausedDesk(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	if _, _, err := h.Desk.Pause("alice", "lunch"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	errb := newLockedBuffer()
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"trigger", "main", "later", "--id", "p1", "--wait", "--timeout", "30s", "--addr", h.URL()}, &out, errb)
	}()
	passFirstWait(t, h)
	errb.waitFor(t, "desk main is paused by alice since ")
	errb.waitFor(t, ": lunch; the trigger waits in the queue until deskd resume main\n")
	if _, err := h.Desk.Resume("bob"); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errb.String(), "p1: answered") {
			t.Errorf("trigger --wait = %d %s%s", code, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("trigger --wait did not end after the resume")
	}
}
