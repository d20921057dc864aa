package natsfeed

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/config"
)

// Cluster mode (Options.Lease set): each desk has a durable consumer of
// its own on the same stream, bound only by the desk's owner, so that a
// desk's triggers go to the one host that runs it and a new owner takes
// up where the old one stopped.
const (
	// DeskPullMessages is how many messages a desk's consumer pulls
	// ahead of the one being handled: the most that can wait for a dead
	// owner's AckWait (the lease) before they come to the new owner.
	DeskPullMessages = 16
)

// DeskConsumer is the name of desk's durable consumer in cluster mode:
// the configured consumer's name, a dash and the desk's (deskd-main).
// Desk names (a-z, 0-9, _ and -) are always good consumer names.
func DeskConsumer(t config.NATSTriggers, desk string) string { return t.Consumer + "-" + desk }

// DeskSubject is the subject of desk's triggers: <prefix>.<desk>.
func DeskSubject(t config.NATSTriggers, desk string) string { return t.Prefix() + "." + desk }

// DeskConsumerConfig is desk's durable consumer in cluster mode:
// ConsumerConfig filtered to DeskSubject, named DeskConsumer, with the
// lease as its AckWait, so that a message pulled by an owner that died
// is delivered again within the lease.
func DeskConsumerConfig(t config.NATSTriggers, desk string, lease time.Duration) jetstream.ConsumerConfig {
	c := ConsumerConfig(t, lease)
	c.Durable = DeskConsumer(t, desk)
	c.Description = "deskd's trigger ingress of desk " + desk
	c.FilterSubject = DeskSubject(t, desk)
	return c
}

// bindings are the desks a feed in cluster mode consumes.
type bindings struct {
	bmu     sync.Mutex
	bound   map[string]*binding
	closing bool           // set by Stop: no Bind after it
	running sync.WaitGroup // every binding's goroutine, unbound ones that still drain too
}

// binding is one desk bound on this host.
type binding struct {
	desk   string
	cancel context.CancelFunc
	ready  chan struct{} // closed once its consumer consumes
	once   sync.Once

	// mu is held while a message of the desk is acted on (submitted,
	// acked, refused); unbound, set under it, makes every later message
	// go back unhandled.
	mu      sync.Mutex
	unbound bool
}

// hold reports whether the desk is still bound here; if so it holds b
// until release, so that Unbind waits for the message being acted on.
func (b *binding) hold() bool {
	b.mu.Lock()
	if b.unbound {
		b.mu.Unlock()
		return false
	}
	return true
}

// release ends a hold.
func (b *binding) release() { b.mu.Unlock() }

// unbind marks b unbound, once the message being acted on (if any) is
// done, and ends its consumer: the drain that follows hands back what
// it had pulled.
func (b *binding) unbind() {
	b.mu.Lock()
	b.unbound = true
	b.mu.Unlock()
	b.cancel()
}

// startCluster starts the feed in cluster mode: it consumes nothing until
// Bind.
func (f *Feed) startCluster() {
	f.bound = map[string]*binding{}
	f.once.Do(func() { close(f.ready) })
	close(f.done)
}

// Bind starts consuming desk's triggers on this host, through its own
// durable consumer (DeskConsumerConfig), created if it does not exist,
// on the stream of today's consumer (created too if it does not exist).
// Only the desk's owner calls it, once it has won the desk's lease and
// the desk runs (Desks.Get finds it: a message of a desk bound but not
// found is handed back with the backpressure delay, NakDelay). It
// returns at once: the consumer is set up in the background, again and
// again while NATS refuses (Bound is closed once it consumes). A desk
// bound already stays as it is. It is an error on a feed not in cluster
// mode (Options.Lease) or stopped, and for a desk name no subject can
// hold.
func (f *Feed) Bind(desk string) error {
	if f.o.Lease <= 0 {
		return fmt.Errorf("nats triggers: bind desk %s: the feed is not in cluster mode (no lease)", desk)
	}
	if desk == "" || strings.ContainsAny(desk, " \t\r\n.*>/\\") {
		return fmt.Errorf("nats triggers: bind desk %q: want a desk name, without spaces, dots, wildcards or slashes (one subject token, a consumer name)", desk)
	}
	f.bmu.Lock()
	defer f.bmu.Unlock()
	if f.closing {
		return fmt.Errorf("nats triggers: bind desk %s: the feed is stopped", desk)
	}
	if _, ok := f.bound[desk]; ok {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &binding{desk: desk, cancel: cancel, ready: make(chan struct{})}
	f.bound[desk] = b
	f.running.Go(func() {
		f.keep(ctx, consumer{
			config: DeskConsumerConfig(f.o.Triggers, desk, f.o.Lease), maxMessages: DeskPullMessages, pullAgain: true,
			handle: func(m jetstream.Msg) { f.process(m, b) },
			ready:  func() { b.once.Do(func() { close(b.ready) }) },
			// Drain, not Stop: the messages pulled ahead still reach
			// the handler, which hands each back at once.
			stop: jetstream.ConsumeContext.Drain,
		})
	})
	return nil
}

// Unbind stops consuming desk's triggers on this host: the message being
// queued, if any, is waited for, nothing of the desk's is queued or
// acknowledged here once Unbind returns, and every message pulled but
// not acked is handed back (nak) as the consumer drains, right after,
// so that NATS delivers it again at once, to the desk's next owner. The
// host calls it when it loses or releases the desk's lease, before it
// stops the desk. A desk not bound here is left as it is.
func (f *Feed) Unbind(desk string) {
	f.bmu.Lock()
	b, ok := f.bound[desk]
	delete(f.bound, desk)
	f.bmu.Unlock()
	if ok {
		b.unbind()
	}
}

// Bound is closed once desk's consumer consumes on this host; it is nil
// when desk is not bound here.
func (f *Feed) Bound(desk string) <-chan struct{} {
	f.bmu.Lock()
	defer f.bmu.Unlock()
	if b, ok := f.bound[desk]; ok {
		return b.ready
	}
	return nil
}

// unbindAll unbinds every desk, takes no Bind after, and waits until
// each consumer has drained (up to 5s each, as Stop's).
func (f *Feed) unbindAll() {
	f.bmu.Lock()
	f.closing = true
	bs := f.bound
	f.bound = nil
	f.bmu.Unlock()
	for _, b := range bs {
		b.unbind()
	}
	f.running.Wait()
}
