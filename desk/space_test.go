package desk_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

// TestLowSpaceShowsBeforeAWriteFails: the state folder's free space,
// looked at every 10s on deskd's clock, falls below the threshold: the
// desk's storage (and so its status and /healthz) shows "low space", and
// storage.low is announced once, before any write fails; the desk still
// takes its turns. Back above the threshold, storage.space_ok, and the
// storage is clear again.
func TestLowSpaceShowsBeforeAWriteFails(t *testing.T) {
	const mib = 1 << 20
	var free atomic.Uint64
	free.Store(4096 * mib)
	looked := make(chan struct{}, 16)
	p := &desk.SpaceProbe{Dir: "/var/lib/deskd", Min: 256 * mib, Every: 10 * time.Second,
		Statfs: func(dir string) (uint64, uint64, error) {
			defer func() { looked <- struct{}{} }()
			if dir != "/var/lib/deskd" {
				t.Errorf("Statfs(%q), want the state folder", dir)
			}
			return free.Load(), 100000 * mib, nil
		}}
	h := desktest.New(t, desktest.Options{Space: p})
	p.Clock, p.Bus = h.Clock, h.Bus
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// wait waits for the probe's next look.
	wait := func() {
		t.Helper()
		select {
		case <-looked:
		case <-time.After(eventtest.Timeout):
			t.Fatal("the probe did not look")
		}
	}
	// next moves the clock to the probe's next look and waits for it.
	next := func() {
		t.Helper()
		at := h.Clock.Now().Add(10 * time.Second)
		wctx, stop := context.WithTimeout(t.Context(), eventtest.Timeout)
		defer stop()
		if err := h.Clock.WaitTimerAt(wctx, at); err != nil {
			t.Fatal(err)
		}
		h.Clock.Set(at)
		wait()
	}
	wait() // the look at start
	// Statfs has answered; the look is done once the probe sleeps again.
	wctx, stop := context.WithTimeout(t.Context(), eventtest.Timeout)
	defer stop()
	if err := h.Clock.WaitTimerAt(wctx, h.Clock.Now().Add(10*time.Second)); err != nil {
		t.Fatalf("the probe does not sleep after its first look: %v", err)
	}
	if st := h.Desk.Storage(); st != nil {
		t.Fatalf("Storage with 4 GiB free = %+v, want nil", st)
	}
	if got, ok := p.FreeBytes(); !ok || got != 4096*mib {
		t.Errorf("FreeBytes = %d, %v; want 4 GiB", got, ok)
	}

	free.Store(100 * mib)
	next()
	low := eventtest.Next[event.StorageLow](h.Events)
	if low.FreeBytes != 100*mib || low.MinFreeBytes != 256*mib || low.Dir != "/var/lib/deskd" {
		t.Errorf("storage.low = %+v, want 100 MiB free of a 256 MiB threshold on the state folder", low)
	}
	const want = "low space: 100 MiB free on /var/lib/deskd, below 256 MiB"
	for name, st := range map[string]*desk.StorageStatus{"Storage": h.Desk.Storage(), "Status().Storage": h.Desk.Status().Storage} {
		if st == nil || st.Error != want || !st.LowSpace || st.FreeBytes != 100*mib || st.DiskFull {
			t.Errorf("%s = %+v, want %q, low_space", name, st, want)
		}
	}
	// Low space does not stall the desk: its turns run.
	h.Submit(triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
	// Waited for by its event, not settle, which moves the clock (and so
	// the probe's next look) when the turn takes a while.
	eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "A" })
	if s, _ := h.Desk.Trigger("A"); s.State != triggers.StateAnswered {
		t.Errorf("a trigger while the space is low ended %s (%q), want answered", s.State, s.Reason)
	}
	free.Store(90 * mib) // still low: announced once
	next()

	free.Store(2048 * mib)
	next()
	ok := eventtest.Next[event.StorageSpaceOK](h.Events)
	if ok.FreeBytes != 2048*mib || !ok.Since.Equal(low.At) {
		t.Errorf("storage.space_ok = %+v, want 2 GiB free, low since %v", ok, low.At)
	}
	eventtest.ExpectNone[event.StorageLow](h.Events) // storage.space_ok is the barrier: announced once
	if st := h.Desk.Storage(); st != nil {
		t.Errorf("Storage once the space is back = %+v, want nil", st)
	}
}
