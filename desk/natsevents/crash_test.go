package natsevents_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/natsevents"
)

// copyOutbox copies the outbox's folder as it is on disk now: what a
// SIGKILL of deskd at this instant would leave (the kernel keeps what was
// written).
func copyOutbox(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{natsevents.OutboxFile, natsevents.KeyFile} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatalf("copy the outbox: %v", err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// TestAnEventIsInTheOutboxWhenItsPublishReturns: the outbox has every
// event by the time event.Publish returns, however many come at once, so
// that a SIGKILL right after a desk recorded what an event reports (the
// ledger's answered) cannot lose it, and no full mailbox can drop one
// (the bus's Dropped). Here deskd is "killed" just after the last
// publish: the folder as it is then, reopened by a new publisher, sends
// every event, in order.
func TestAnEventIsInTheOutboxWhenItsPublishReturns(t *testing.T) {
	ns := deadNATS(t) // away: everything waits in the outbox
	nc := ns.connect()
	dir := t.TempDir()
	r := newRig(t, nc, dir, 0, clock.NewFake(t0))
	const n = 3000
	for i := range n {
		event.Publish(r.bus, turn("main", i))
	}
	if st := r.pub.Stats(); st.Waiting != n || st.Dropped != 0 {
		t.Errorf("once the last publish returned: %+v, want all %d waiting in the outbox", st, n)
	}
	if d := r.bus.Dropped(); d != 0 {
		t.Errorf("the bus dropped %d deliveries", d)
	}
	killed := copyOutbox(t, dir)
	// The killed deskd sends nothing more: left running, it would send
	// its copy of every event too, and each copy after the first would be
	// announced as a nats.duplicate, an event of its own on the stream.
	r.close()

	ns.start()
	r2 := newRig(t, nc, killed, 0, clock.NewFake(t0))
	r2.waitStats("all sent after the restart", func(s natsevents.Stats) bool { return s.Waiting == 0 })
	if c := streamCount(t, nc); c != n {
		t.Fatalf("stream holds %d messages after the crash, want every one of the %d published", c, n)
	}
	for i, m := range streamMsgs(t, nc, n) {
		if want := fmt.Sprintf("t%03d", i); trigger(t, m) != want {
			t.Fatalf("message %d is %s, want trigger %s (in order)", i, m.Data(), want)
		}
	}
}
