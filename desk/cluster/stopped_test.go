package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/natstest"
)

// TestStoppedOwnerWakesToATakenLease: host a is stopped past its lease
// (its clock stands still while b's runs on, as under SIGSTOP or a paused
// VM) and b takes the desk. When a wakes, its renewal and its lease's end
// are due at once, and whichever it takes first, its lease ends taken
// (ErrTaken with ErrLost): the stores answered, another host holds the
// desk. Before, the end of the lease, read first, said only ErrLost, and
// the desk reported its stores failed. Which timer a reads first is the
// scheduler's choice: the test wakes 48 stopped owners, one desk each.
func TestStoppedOwnerWakesToATakenLease(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	c := natstest.StartCluster(t, 1)
	for i := range 48 {
		wakeToATakenLease(t, c, fmt.Sprintf("desk%02d", i))
	}
}

// wakeToATakenLease is one round of TestStoppedOwnerWakesToATakenLease,
// on desk name, with hosts of its own.
func wakeToATakenLease(t *testing.T, c *natstest.Cluster, name string) {
	t.Helper()
	clkA, clkB := clock.NewFake(t0), clock.NewFake(t0)
	a, b := newHost(t, c, "a", clkA), newHost(t, c, "b", clkB)
	ha := a.acquire(t, name)
	if err := clkA.WaitPending(within(t, 10*time.Second), 2); err != nil {
		t.Fatal("a's lease armed no renewal and no end")
	}
	cb := b.contend(t, name)
	if err := clkB.WaitPending(within(t, 10*time.Second), 1); err != nil {
		t.Fatal("b armed no try at the end of a's lease")
	}
	clkB.Set(t0.Add(lease))
	hb := cb.wins(t, "of a's lease's end")
	t.Cleanup(func() { _ = hb.Release(context.Background()) })
	if !ha.Holds() {
		t.Fatalf("a, stopped, already knows its lease is gone: %v", ha.Err())
	}

	clkA.Set(t0.Add(2 * lease)) // a wakes
	select {
	case <-ha.Lost():
	case <-within(t, 10*time.Second).Done():
		t.Fatal("a's lease did not end within 10s of its waking")
	}
	if err := ha.Err(); !errors.Is(err, cluster.ErrTaken) || !errors.Is(err, cluster.ErrLost) {
		t.Fatalf("%s: a's lease ended with %v, want ErrTaken and ErrLost: host b holds the desk", name, err)
	}
}
