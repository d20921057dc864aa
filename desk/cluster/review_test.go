package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/natstest"
)

// TestSeedAfterAFenceThatNeverSeeded: the first owner of a desk that a
// single host ran until today fences its WAL and dies (SIGKILL, a power
// cut) before its Seed; when it starts again it wins the lease at a new
// epoch and fences again. The stores still hold nothing of the desk but
// fences, so the second Seed must make the local folder the snapshot,
// and Rebuild must give that folder back: were the folder rebuilt empty
// and swapped in, the desk's whole single-host history would be set
// aside as .<desk>.replaced, and removed at the next takeover.
func TestSeedAfterAFenceThatNeverSeeded(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	c := natstest.StartCluster(t, 3)
	clk := clock.NewFake(t0)
	live := filepath.Join(t.TempDir(), "alpha")
	for name, data := range map[string]string{
		"triggers.jsonl": "{\"id\":\"t1\"}\n", "Memory.md": "# Lessons\n", "sessions/s1.jsonl": "{\"turn\":1}\n",
	} {
		p := filepath.Join(live, filepath.FromSlash(name))
		must(t, "mkdir", os.MkdirAll(filepath.Dir(p), 0o750))
		must(t, "write "+name, os.WriteFile(p, []byte(data), 0o640))
	}

	first := newHost(t, c, "a", clk)
	h1 := first.acquire(t, "alpha")
	first.fence(t, "alpha", h1)
	// Killed here: no Seed. The same host starts again.
	again := newHost(t, c, "a", clk)
	h2 := again.acquire(t, "alpha")
	t.Cleanup(func() { _ = h2.Release(t.Context()) })
	if h2.Epoch() <= h1.Epoch() {
		t.Fatalf("the restarted host won epoch %d, want one after %d", h2.Epoch(), h1.Epoch())
	}
	w := again.fence(t, "alpha", h2)
	seeded, err := cluster.Seed(within(t, 30*time.Second), again.stores, "alpha", live, w)
	if err != nil || !seeded {
		t.Fatalf("Seed after a fence that never seeded: %v, %v: want seeded (the WAL holds only fences)", seeded, err)
	}
	got, r := rebuilt(t, again.stores, 0)
	if r.Snapshot != last(w) {
		t.Errorf("rebuilt %+v: want the snapshot at the second fence %d", r, last(w))
	}
	sameFiles(t, got, live)
}

// stale is the lease of an owner whose lease is running out as a new
// owner fences: it holds until armed, and then for only the next few
// looks (its publishes already past their check of the lease).
type stale struct {
	epoch uint64
	armed atomic.Bool
	left  atomic.Int32
}

func (s *stale) Epoch() uint64 { return s.epoch }
func (s *stale) Holds() bool   { return !s.armed.Load() || s.left.Add(-1) >= 0 }

// TestFenceWhileTheOldOwnerStillPublishes: a new owner's fence expects
// the subject's last sequence as it read it a moment before; a record of
// the old owner (its publish in flight as its lease ran out) that lands
// in that moment makes the stream refuse the fence. The new owner, whose
// lease still holds, must fence again after that record, not give the
// desk up (the daemon then releases the lease and stops contending for
// the desk until a reload). Each round, on a desk of its own: a's writer
// appends without pause, and goes on for a few records once b begins to
// fence; b's fence must succeed, a must then be refused, and the WAL
// must rebuild with every record a appended before the fence.
func TestFenceWhileTheOldOwnerStillPublishes(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	_, a, b := twoHosts(t, 3, "b")
	for round := range 8 {
		name := fmt.Sprintf("alpha%d", round)
		hb := b.acquire(t, name)
		t.Cleanup(func() { _ = hb.Release(context.Background()) })
		old := &stale{epoch: hb.Epoch() - 1}
		old.left.Store(4)
		wa := a.fence(t, name, old)
		var offset int64
		started, done, quit := make(chan struct{}), make(chan error, 1), make(chan struct{})
		go func() {
			for n := 0; ; n++ {
				select {
				case <-quit:
					done <- nil
					return
				default:
				}
				rec := []byte(fmt.Sprintf("{\"id\":\"r%d\"}\n", n))
				if err := wa.Append(context.Background(), "triggers.jsonl", offset, rec); err != nil {
					done <- err
					return
				}
				offset += int64(len(rec))
				if n == 2 {
					close(started)
				}
			}
		}()
		<-started
		old.armed.Store(true)
		_, ferr := cluster.Fence(within(t, 10*time.Second), b.stores, name, "b", hb)
		if ferr != nil {
			close(quit)
			<-done
			t.Fatalf("round %d: the new owner's fence, while the old owner publishes: %v", round, ferr)
		}
		if aerr := <-done; !errors.Is(aerr, cluster.ErrFenced) {
			t.Fatalf("round %d: the old owner's append after the fence: %v, want ErrFenced", round, aerr)
		}
		dir := filepath.Join(t.TempDir(), name)
		if _, err := cluster.Rebuild(within(t, 30*time.Second), b.stores, name, dir, 0); err != nil {
			t.Fatalf("round %d: rebuild: %v", round, err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "triggers.jsonl")); err != nil || fi.Size() != offset {
			t.Fatalf("round %d: the rebuilt ledger: %v, %v; want the %d bytes a appended before the fence", round, fi, err, offset)
		}
	}
}

// lostReplies is a KV bucket whose next few Updates are written but
// whose answers are lost (a timeout on a loaded cluster): the caller
// gets an error though the write is in the bucket.
type lostReplies struct {
	jetstream.KeyValue
	lose    atomic.Int32
	updates chan error // a nil for each Update the bucket wrote
}

func (k *lostReplies) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	n, err := k.KeyValue.Update(ctx, key, value, rev)
	if err == nil {
		k.updates <- err
	}
	if err == nil && k.lose.Add(-1) >= 0 {
		return 0, context.DeadlineExceeded
	}
	return n, err
}

// TestRenewalWhoseAnswerWasLostKeepsTheLease: a renewal that the bucket
// wrote but whose answer never came leaves the owner holding an old
// revision; its next renewal, refused because the revision moved, finds
// its own write there, not another host's, and the lease goes on. Were
// the lease lost, the desk would stop at once (its turn cut short and
// shown interrupted) and be taken again by the same host at a new epoch,
// for a slow answer.
func TestRenewalWhoseAnswerWasLostKeepsTheLease(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	c := natstest.StartCluster(t, 1)
	clk := clock.NewFake(t0)
	a := newHost(t, c, "a", clk)
	kv := &lostReplies{KeyValue: a.stores.Owners, updates: make(chan error, 16)}
	l, err := cluster.NewLeases(kv, cluster.LeaseConfig{Host: "a", Addr: "a:7317", Lease: lease, Clock: clk})
	must(t, "leases", err)
	h, err := l.Acquire(within(t, 30*time.Second), "alpha", nil)
	must(t, "acquire", err)
	t.Cleanup(func() { _ = h.Release(context.Background()) })
	kv.lose.Store(1)
	for n := range 4 {
		if err := clk.WaitPending(within(t, 10*time.Second), 2); err != nil {
			t.Fatalf("renewal %d: the lease armed no renewal (it ended: %v)", n+1, h.Err())
		}
		clk.Advance(lease / 3)
		select {
		case <-kv.updates:
		case <-within(t, 10*time.Second).Done():
			t.Fatalf("renewal %d: no renewal within 10s", n+1)
		}
	}
	if err := clk.WaitPending(within(t, 10*time.Second), 2); err != nil || !h.Holds() {
		t.Fatalf("after a renewal whose answer was lost, the lease ended: %v", h.Err())
	}
}
