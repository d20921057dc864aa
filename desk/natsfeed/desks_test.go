package natsfeed_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/desk/natsconn"
	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/desk/natstest"
)

// deskConsumer is the consumer of desk main in cluster mode.
var deskConsumer = natsfeed.DeskConsumer(testTriggers, desktest.Name)

// cluster is a three-node JetStream cluster and a publisher on it, for
// the hosts of a test.
type cluster struct {
	t   *testing.T
	c   *natstest.Cluster
	pub *nats.Conn
	js  jetstream.JetStream
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cl := &cluster{t: t, c: natstest.StartCluster(t, 3)}
	cl.pub, cl.js = cl.c.Client()
	deadline := time.Now().Add(60 * time.Second) // a cluster's first stream takes long on a loaded machine
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := natsfeed.EnsureStream(ctx, cl.js, testTriggers)
		cancel()
		if err == nil {
			return cl
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// host is one deskd of the cluster: desk main (its own folder), its own
// connection to the cluster, and a feed in cluster mode with lease.
type host struct {
	t     *testing.T
	d     *desktest.Desk
	conn  *natsconn.Conn
	desks *heldDesks
	feed  *natsfeed.Feed
}

func (cl *cluster) host(lease time.Duration) *host {
	t := cl.t
	t.Helper()
	h := &host{t: t, d: desktest.New(t, desktest.Options{}), conn: connect(t, cl.c.URLs())} // every node's URL
	h.desks = &heldDesks{set: desk.NewSet(h.d.Desk), held: make(chan struct{}, 1), release: make(chan struct{})}
	h.feed = natsfeed.Start(natsfeed.Options{
		Conn: h.conn.NATS(), Triggers: testTriggers, Desks: h.desks, Bus: h.d.Bus, Clock: clock.Real(),
		Log: zerolog.New(zerolog.NewTestWriter(t)), NakDelay: 100 * time.Millisecond, Lease: lease,
	})
	t.Cleanup(h.feed.Stop)
	t.Cleanup(h.desks.letGo) // before Stop: a message held is let go first
	return h
}

// bind binds desk main on h and waits until it consumes.
func (h *host) bind() {
	h.t.Helper()
	if err := h.feed.Bind(desktest.Name); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.feed.Bound(desktest.Name):
	case <-time.After(eventtest.Timeout):
		h.t.Fatal("the desk's consumer does not consume within the timeout")
	}
}

// hold makes the next message h handles wait, pulled and not acked,
// until the end of the test; it returns once one does.
func (h *host) hold(publish func()) {
	h.t.Helper()
	h.desks.armed.Store(true)
	publish()
	select {
	case <-h.desks.held:
	case <-time.After(eventtest.Timeout):
		h.t.Fatal("no message reached the handler within the timeout")
	}
}

// heldDesks is the desks of a host whose Get, once armed, holds the
// message being handled (before it is queued or acked) until letGo.
type heldDesks struct {
	set     *desk.Set
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *heldDesks) Get(name string) (*desk.Desk, bool) {
	if h.armed.CompareAndSwap(true, false) {
		h.held <- struct{}{}
		<-h.release
	}
	return h.set.Get(name)
}

func (h *heldDesks) letGo() { h.once.Do(func() { close(h.release) }) }

func (cl *cluster) publish(id, body string) {
	cl.t.Helper()
	natstest.Publish(cl.t, cl.js, natsfeed.DeskSubject(testTriggers, desktest.Name), id, body)
}

// info is desk main's consumer's state now.
func (cl *cluster) info() *jetstream.ConsumerInfo {
	cl.t.Helper()
	return consumerInfo(cl.t, cl.js, deskConsumer)
}

// waitInfo waits, up to the timeout, until desk main's consumer is as ok
// says, reading it every 20ms.
func (cl *cluster) waitInfo(what string, ok func(*jetstream.ConsumerInfo) bool) *jetstream.ConsumerInfo {
	cl.t.Helper()
	deadline := time.After(eventtest.Timeout)
	for {
		info := cl.info()
		if ok(info) {
			return info
		}
		select {
		case <-deadline:
			cl.t.Fatalf("desk main's consumer is not %s within the timeout: %+v", what, info)
		case <-time.After(20 * time.Millisecond): // a poll of the server's state, not a wait for time to pass
		}
	}
}

// acked waits until desk main's consumer has every message acked. (Not
// natstest.WaitAcked: on a cluster its subscription to the acks may not
// be known yet on the node of the host that acks.)
func (cl *cluster) acked() {
	cl.t.Helper()
	cl.waitInfo("with every message acked", func(i *jetstream.ConsumerInfo) bool { return i.NumAckPending == 0 && i.NumPending == 0 })
}

// queuedEach waits until every trigger of ids is queued, in any order.
func queuedEach(w *eventtest.Watcher, ids ...string) {
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	eventtest.NextWhere(w, func(e event.TriggerQueued) bool {
		delete(left, e.Trigger)
		return len(left) == 0
	})
}

// queuedTimes is how many times h's desk queued the trigger id.
func (h *host) queuedTimes(id string) int { return countQueued(h.d.Events, id) }

// queuedOnce fails the test unless h's desk queued each trigger of ids
// once; as names h in the errors.
func (h *host) queuedOnce(as string, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		if n := h.queuedTimes(id); n != 1 {
			h.t.Errorf("%s queued %d times on %s, want once", id, n, as)
		}
	}
}

// neverQueued fails the test if h's desk queued any trigger of ids; as
// names h in the errors.
func (h *host) neverQueued(as string, ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		if n := h.queuedTimes(id); n != 0 {
			h.t.Errorf("%s queued %d times on %s, want never", id, n, as)
		}
	}
}

// settled publishes one more message and waits until h has queued it and
// desk main's consumer has every message acked: none before it is still
// on its way to h.
func (cl *cluster) settled(h *host) {
	cl.t.Helper()
	cl.publish("after", `{"text":"barrier"}`)
	queued(h.d.Events, "after")
	cl.acked()
}

// TestClusterBoundDeskOnly: in cluster mode the feed consumes nothing
// until Bind; desk main bound on the first host, its messages go to that
// host only, through the desk's own consumer (deskd-main, filter
// deskd.triggers.main, AckWait the lease), and no shared consumer is
// made.
func TestClusterBoundDeskOnly(t *testing.T) {
	t.Parallel() // its own NATS cluster, waiting out real leases: beside the rest
	cl := newCluster(t)
	const lease = 3 * time.Second
	a, b := cl.host(lease), cl.host(lease)
	a.bind()
	if b.feed.Bound(desktest.Name) != nil {
		t.Error("Bound(main) on a host that never bound it is not nil")
	}
	ids := []string{"only-1", "only-2", "only-3"}
	for _, id := range ids {
		cl.publish(id, `{"text":"`+id+`"}`)
	}
	queuedEach(a.d.Events, ids...)
	cl.acked()
	a.queuedOnce("the owner", ids...)
	b.neverQueued("the host that did not bind main", ids...)
	info := cl.info()
	if info.Name != "deskd-main" || info.Config.FilterSubject != "deskd.triggers.main" || info.Config.AckWait != lease {
		t.Errorf("desk main's consumer: name %q, filter %q, AckWait %v; want deskd-main, deskd.triggers.main, %v",
			info.Name, info.Config.FilterSubject, info.Config.AckWait, lease)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cl.js.Consumer(ctx, testTriggers.Stream, testTriggers.Consumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the shared consumer %s in cluster mode: %v, want none (ErrConsumerNotFound)", testTriggers.Consumer, err)
	}
}

// TestClusterUnbindHandsBackAtOnce: the owner unbinds with one message in
// its handler and one pulled behind it, neither acked; both come to the
// next owner at once (the lease, their AckWait, is a minute), and each is
// queued once, there only.
func TestClusterUnbindHandsBackAtOnce(t *testing.T) {
	t.Parallel() // its own NATS cluster, waiting out real leases: beside the rest
	cl := newCluster(t)
	const lease = time.Minute // far beyond the waits below: only a nak brings them back in time
	a, b := cl.host(lease), cl.host(lease)
	a.bind()
	a.hold(func() { cl.publish("held-1", `{"text":"one"}`) })
	cl.publish("held-2", `{"text":"two"}`)
	cl.waitInfo("holding both messages pulled and not acked", func(i *jetstream.ConsumerInfo) bool {
		return i.NumAckPending == 2 && i.NumPending == 0
	})
	unbound := make(chan struct{})
	go func() { a.feed.Unbind(desktest.Name); close(unbound) }()
	select {
	case <-unbound:
	case <-time.After(eventtest.Timeout):
		t.Fatal("Unbind waits for a message that is not being queued")
	}
	if a.feed.Bound(desktest.Name) != nil {
		t.Error("Bound(main) after Unbind is not nil")
	}
	// The old owner's subscription is gone before its handler goes on:
	// the message pulled behind the held one is handed back by the drain,
	// not by the handler winning a race with the unsubscribe.
	cl.waitInfo("without the old owner's pull", func(i *jetstream.ConsumerInfo) bool { return i.NumWaiting == 0 })
	a.desks.letGo()
	b.bind()
	ids := []string{"held-1", "held-2"}
	queuedEach(b.d.Events, ids...)
	cl.settled(b)
	b.queuedOnce("the new owner", ids...)
	for _, id := range ids {
		if st, ok := b.d.Desk.Trigger(id); !ok || st.Source != natsfeed.Source {
			t.Errorf("the new owner's ledger: Trigger(%s) = %+v, %v; want it, from nats", id, st, ok)
		}
		if _, ok := a.d.Desk.Trigger(id); ok || a.queuedTimes(id) != 0 {
			t.Errorf("%s was queued on the host that unbound the desk", id)
		}
	}
}

// TestClusterKilledOwnerRedeliveredWithinLease: the owner's connection
// closes (a killed deskd: no Unbind) with a message pulled and not acked;
// the next owner has it once its AckWait, the lease (2s), has passed,
// well before the 30s AckWait of the shared consumer.
func TestClusterKilledOwnerRedeliveredWithinLease(t *testing.T) {
	t.Parallel() // its own NATS cluster, waiting out real leases: beside the rest
	cl := newCluster(t)
	const lease = 2 * time.Second
	a, b := cl.host(lease), cl.host(lease)
	a.bind()
	a.hold(func() { cl.publish("killed-1", `{"text":"one"}`) })
	if info := cl.info(); info.NumAckPending != 1 || info.Config.AckWait != lease {
		t.Fatalf("before the kill: %d pending ack, AckWait %v; want the message pulled, AckWait %v", info.NumAckPending, info.Config.AckWait, lease)
	}
	a.conn.Close()
	b.bind()
	if natsfeed.AckWait <= eventtest.Timeout {
		t.Fatalf("the shared AckWait %v is within the wait below (%v): the test could not tell them apart", natsfeed.AckWait, eventtest.Timeout)
	}
	q := queued(b.d.Events, "killed-1") // fails after eventtest.Timeout (10s), a third of AckWait
	if q.Source != natsfeed.Source {
		t.Errorf("the redelivered trigger = %+v, want source nats", q)
	}
	cl.settled(b)
	b.queuedOnce("the new owner", "killed-1")
}

// TestClusterUnboundDeskLosesNothing: messages published before any
// host ever bound the desk, and while no host has it bound, wait on the
// desk's consumer (none acked) and each is queued once by the next
// owner. (One published in the instant of the Unbind may still go to the
// old subscription, on a node that has not yet heard it is gone: it is
// pending ack, and comes back after its AckWait, the lease.)
func TestClusterUnboundDeskLosesNothing(t *testing.T) {
	t.Parallel() // its own NATS cluster, waiting out real leases: beside the rest
	cl := newCluster(t)
	const lease = 2 * time.Second
	a, b := cl.host(lease), cl.host(lease)
	cl.publish("early", `{"text":"before any owner"}`)
	a.bind()
	queued(a.d.Events, "early")
	cl.acked()
	a.feed.Unbind(desktest.Name)
	ids := []string{"gap-1", "gap-2", "gap-3", "gap-4"}
	for _, id := range ids {
		cl.publish(id, `{"text":"`+id+`"}`)
	}
	// The consumer's state on a replicated stream follows the stream's
	// a moment later: wait until it counts the four, then check none of
	// them was acked.
	info := cl.waitInfo("counting the 4 published with no owner", func(i *jetstream.ConsumerInfo) bool {
		return i.NumPending+uint64(i.NumAckPending) >= uint64(len(ids))
	})
	if info.NumPending+uint64(info.NumAckPending) != uint64(len(ids)) || info.AckFloor.Stream != 1 {
		t.Errorf("with no owner: %d pending, %d pending ack, ack floor %d; want the %d waiting, none acked after the first (1)",
			info.NumPending, info.NumAckPending, info.AckFloor.Stream, len(ids))
	}
	b.bind()
	queuedEach(b.d.Events, ids...)
	cl.acked()
	b.queuedOnce("the new owner", ids...)
	a.neverQueued("the host that unbound the desk", ids...)
	if n := a.queuedTimes("early") + b.queuedTimes("early"); n != 1 {
		t.Errorf("early queued %d times in all, want once", n)
	}
}

// TestBindRefused: Bind on a feed without a lease, with a name that is
// no subject token, or after Stop is an error naming the desk and why;
// Unbind of a desk not bound does nothing.
func TestBindRefused(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	if err := r.feed.Bind("main"); err == nil || !strings.Contains(err.Error(), "bind desk main: the feed is not in cluster mode") {
		t.Errorf("Bind without a lease: %v, want it refused, not in cluster mode", err)
	}
	f := natsfeed.Start(natsfeed.Options{Conn: r.conn.NATS(), Triggers: testTriggers, Desks: desk.NewSet(r.d.Desk), Bus: r.d.Bus,
		Clock: clock.Real(), Log: zerolog.New(zerolog.NewTestWriter(t)), Lease: time.Second})
	t.Cleanup(f.Stop)
	for _, name := range []string{"", "a.b", "a*", "a b", "x/y"} {
		if err := f.Bind(name); err == nil || !strings.Contains(err.Error(), "want a desk name") {
			t.Errorf("Bind(%q): %v, want it refused as no desk name", name, err)
		}
	}
	f.Unbind("never-bound")
	f.Stop()
	if err := f.Bind("main"); err == nil || !strings.Contains(err.Error(), "bind desk main: the feed is stopped") {
		t.Errorf("Bind after Stop: %v, want it refused, stopped", err)
	}
}

var _ natsfeed.Desks = (*heldDesks)(nil)

// TestClusterDeskNotRunningHere: a message of a desk bound on this host
// but not among its running desks (bound before it started) is handed
// back, as backpressure (stopped), not refused: it is queued once the
// desk runs.
func TestClusterDeskNotRunningHere(t *testing.T) {
	t.Parallel() // its own NATS cluster, waiting out real leases: beside the rest
	cl := newCluster(t)
	a := cl.host(time.Minute)
	a.desks.set.Remove(desktest.Name)
	a.bind()
	cl.publish("early-1", `{"text":"before the desk runs"}`)
	bp := eventtest.NextWhere(a.d.Events, func(e event.NATSBackpressure) bool { return e.Trigger == "early-1" })
	if bp.Reason != natsfeed.ReasonStopped || bp.Desk != desktest.Name || !strings.Contains(bp.Error, `no desk "main"`) {
		t.Errorf("nats.backpressure = %+v, want desk main, stopped, no desk", bp)
	}
	if rest := eventtest.Rest[event.NATSRejected](a.d.Events); len(rest) > 0 {
		t.Errorf("refused: %+v, want it handed back only", rest)
	}
	a.desks.set.Put(a.d.Desk)
	queued(a.d.Events, "early-1")
	cl.acked()
}
