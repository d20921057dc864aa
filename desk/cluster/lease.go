package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/clock"
)

// Owner is who holds a desk: the value of its key in OwnersBucket.
type Owner struct {
	// Host is the owner's cluster.host.
	Host string `json:"host"`
	// Addr is the owner's API address, where a standby sends a client
	// (the 421's addr); empty if it has none.
	Addr string `json:"addr,omitempty"`
	// Epoch is the KV revision of the write that won the lease. The
	// winning write itself carries 0 (its revision is not known before
	// it is written); every renewal carries it.
	Epoch uint64 `json:"epoch"`
	// Since is when the owner won the lease, on its clock.
	Since time.Time `json:"since"`
	// Renewed is when the owner sent this write, on its clock: Since for
	// the winning write, later for each renewal.
	Renewed time.Time `json:"renewed"`
}

// ownerOf decodes a KV entry of a desk's key: the owner, with the epoch
// filled in from the revision of the winning write.
func ownerOf(e jetstream.KeyValueEntry) (Owner, error) {
	var o Owner
	if err := json.Unmarshal(e.Value(), &o); err != nil {
		return Owner{}, fmt.Errorf("cluster: the value of %s at revision %d is not an owner: %w", e.Key(), e.Revision(), err)
	}
	if o.Epoch == 0 {
		o.Epoch = e.Revision()
	}
	return o, nil
}

// Standby is what a host waiting for a desk sees: its owner, and when
// the host will try to take it unless the owner renews first.
type Standby struct {
	// Owner is the desk's owner as last seen.
	Owner Owner
	// TakeAt is a full lease after that sighting, on this host's clock.
	TakeAt time.Time
}

// Leases contends for desks' leases as one host.
type Leases struct {
	kv    jetstream.KeyValue
	host  string
	addr  string
	lease time.Duration
	clock clock.Clock
	// timeout bounds each KV request: a third of the lease.
	timeout time.Duration
}

// LeaseConfig is how a host holds leases.
type LeaseConfig struct {
	// Host is this host's name (config cluster.host).
	Host string
	// Addr is this host's API address, told to the other hosts.
	Addr string
	// Lease is the lease's length (config cluster.lease); renewed every
	// Lease/3.
	Lease time.Duration
	// Clock is deskd's clock: every wait of the lease is on it.
	Clock clock.Clock
}

// NewLeases returns the leases of host cfg.Host on the bucket kv.
func NewLeases(kv jetstream.KeyValue, cfg LeaseConfig) (*Leases, error) {
	if cfg.Host == "" || cfg.Lease <= 0 || cfg.Clock == nil {
		return nil, fmt.Errorf("cluster: leases need a host, a lease and a clock (got host %q, lease %v)", cfg.Host, cfg.Lease)
	}
	return &Leases{kv: kv, host: cfg.Host, addr: cfg.Addr, lease: cfg.Lease, clock: cfg.Clock, timeout: cfg.Lease / 3}, nil
}

// Owner reads the desk's owner as the bucket has it now; ok is false when
// the desk has none (never held, or released). An owner whose lease has
// run out is still returned: only a standby's wait decides that.
func (l *Leases) Owner(ctx context.Context, desk string) (_ Owner, ok bool, _ error) {
	e, err := l.kv.Get(ctx, Key(desk))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Owner{}, false, nil
	}
	if err != nil {
		return Owner{}, false, fmt.Errorf("cluster: read the owner of desk %s: %w", desk, err)
	}
	o, err := ownerOf(e)
	return o, err == nil, err
}

// Acquire waits until this host holds the desk's lease, or ctx is done.
// It takes a desk that has no owner at once, and one whose owner is this
// host (a previous run of it) at once too; otherwise it waits until a
// full lease has passed on its clock since it saw the owner's last
// renewal, then takes the desk with a compare-and-set on the revision it
// saw, which fails (and it waits on) if the owner renewed meanwhile.
// seen, if not nil, is called with every other owner it sees while it
// waits (this host is then that desk's standby) and when it will try to
// take the desk if that owner does not renew.
func (l *Leases) Acquire(ctx context.Context, desk string, seen func(Standby)) (*Lease, error) {
	key := Key(desk)
	w, err := l.kv.Watch(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("cluster: watch the owner of desk %s: %w", desk, err)
	}
	defer func() { _ = w.Stop() }()
	var (
		rev     uint64      // the last revision seen; 0: none
		present bool        // the key has an owner at rev
		timer   clock.Timer // when to try to take the desk; nil: not yet
		ready   bool        // the watcher has sent the key's current value
	)
	arm := func(d time.Duration) {
		if timer != nil {
			timer.Stop()
		}
		timer = l.clock.NewTimer(d)
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var fire <-chan time.Time
		if timer != nil {
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: acquire desk %s: %w", desk, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("cluster: acquire desk %s: the watch of its owner ended", desk)
			}
			if e == nil { // the current value has been sent
				ready = true
				if !present {
					arm(0)
				}
				continue
			}
			rev = e.Revision()
			present = e.Operation() == jetstream.KeyValuePut
			if !present {
				if ready {
					arm(0) // released: take it at once
				}
				continue
			}
			o, err := ownerOf(e)
			switch {
			case err != nil:
				arm(l.lease) // a value deskd did not write: wait it out
			case o.Host == l.host:
				arm(0) // a previous run of this host: it is gone
			default:
				arm(l.lease)
				if seen != nil {
					seen(Standby{Owner: o, TakeAt: l.clock.Now().Add(l.lease)})
				}
			}
		case <-fire:
			timer = nil
			h, err := l.take(ctx, desk, rev, present)
			if err == nil {
				return h, nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				arm(l.timeout) // no quorum, a lost connection: try again
			}
			// Otherwise another host won, or the owner renewed: the
			// watch brings its write and the wait starts again.
		}
	}
}

// take tries to write this host's lease of the desk over revision rev
// (a create when the key has no owner). The revision written is the epoch.
func (l *Leases) take(ctx context.Context, desk string, rev uint64, present bool) (*Lease, error) {
	sent := l.clock.Now()
	o := Owner{Host: l.host, Addr: l.addr, Since: sent, Renewed: sent}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode the owner of desk %s: %w", desk, err)
	}
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var won uint64
	if present {
		won, err = l.kv.Update(rctx, Key(desk), b, rev)
	} else {
		won, err = l.kv.Create(rctx, Key(desk), b)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: take desk %s: %w", desk, err)
	}
	o.Epoch = won
	h := &Lease{l: l, desk: desk, owner: o, rev: won, until: sent.Add(l.lease),
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h, nil
}

// ErrLost is the cause of a lost lease: it was not renewed within the
// lease, or another host took the desk.
var ErrLost = errors.New("the lease of the desk is lost")

// ErrTaken is, with ErrLost, the cause of a lease lost because a renewal
// found another host's write: the stores answer, another host owns the
// desk.
var ErrTaken = errors.New("another host took the desk")

// ErrReleased is the cause of a lease ended by Release.
var ErrReleased = errors.New("the lease of the desk was released")

// Lease is this host's hold on one desk. It renews itself every lease/3
// until it is lost or released.
type Lease struct {
	l     *Leases
	desk  string
	owner Owner

	mu    sync.Mutex
	rev   uint64    // the revision of the last write of ours
	until time.Time // held until then unless renewed: the last successful send + lease
	cause error     // why it ended; nil while held
	lost  chan struct{}
	stop  chan struct{} // closed by Release
	// stopOnce closes stop.
	stopOnce sync.Once
	done     chan struct{} // closed when run has returned
}

// Desk is the desk the lease is of.
func (h *Lease) Desk() string { return h.desk }

// Owner is this host as the desk's owner: its epoch, since when.
func (h *Lease) Owner() Owner { return h.owner }

// Epoch is the desk's epoch under this lease.
func (h *Lease) Epoch() uint64 { return h.owner.Epoch }

// Holds reports whether the lease is held now: not lost, not released,
// and less than a full lease since the last renewal was sent. It turns
// false on time, even when the renewal loop is late to notice.
func (h *Lease) Holds() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause == nil && h.l.clock.Now().Before(h.until)
}

// HeldUntil is when the lease runs out unless renewed: a full lease
// after the last successful renewal was sent.
func (h *Lease) HeldUntil() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.until
}

// Lost is closed once the lease has ended (lost or released); Err says why.
func (h *Lease) Lost() <-chan struct{} { return h.lost }

// Err is why the lease ended (errors.Is ErrLost or ErrReleased); nil while held.
func (h *Lease) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause
}

// end ends the lease with cause, once.
func (h *Lease) end(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause == nil {
		h.cause = cause
		close(h.lost)
	}
}

// run renews the lease every lease/3 until it is lost or released.
func (h *Lease) run() {
	defer close(h.done)
	l := h.l
	renew := l.clock.NewTimer(l.lease / 3)
	defer func() { renew.Stop() }()
	h.mu.Lock()
	deadline := l.clock.NewTimer(h.until.Sub(l.clock.Now()))
	h.mu.Unlock()
	defer func() { deadline.Stop() }()
	for {
		select {
		case <-h.stop:
			return
		case <-deadline.C():
			if !h.Holds() {
				h.end(h.expired())
				return
			}
			h.mu.Lock()
			deadline = l.clock.NewTimer(h.until.Sub(l.clock.Now()))
			h.mu.Unlock()
		case <-renew.C():
			renew = l.clock.NewTimer(l.lease / 3)
			if err := h.renew(); err != nil {
				h.end(err)
				return
			}
		}
	}
}

// expired is the cause of a lease that ran out before a renewal was taken
// in: ErrLost, with ErrTaken too when the desk's key names another owner
// by then. A host stopped past its lease (SIGSTOP, a paused VM) wakes to
// both timers due at once; whichever it reads first, it finds the desk
// taken, not stores that do not answer.
func (h *Lease) expired() error {
	l := h.l
	lost := fmt.Errorf("desk %s, epoch %d: not renewed within the lease (%v): %w", h.desk, h.owner.Epoch, l.lease, ErrLost)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	e, err := l.kv.Get(ctx, Key(h.desk))
	if err != nil {
		return lost // the key's reader cannot tell: perhaps the stores do not answer
	}
	var o Owner
	if json.Unmarshal(e.Value(), &o) != nil || o.Host == l.host { // ours (its first write carries epoch 0)
		return lost
	}
	return fmt.Errorf("desk %s, epoch %d: not renewed within the lease (%v), and host %s holds it now: %w: %w",
		h.desk, h.owner.Epoch, l.lease, o.Host, ErrTaken, ErrLost)
}

// renew writes the lease again over our last revision. A refused write
// (another host's revision is there) loses the lease; any other failure
// is tried again at the next period, and the lease runs out if none
// succeeds in time.
func (h *Lease) renew() error {
	l := h.l
	sent := l.clock.Now()
	o := h.owner
	o.Renewed = sent
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("desk %s: encode the lease: %w", h.desk, err)
	}
	h.mu.Lock()
	rev := h.rev
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	next, err := l.kv.Update(ctx, Key(h.desk), b, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// The revision moved: another host's write, or one of ours whose
		// answer was lost (a renewal that timed out but was written).
		if ours, ok := h.ownWrite(ctx); ok {
			next, err = l.kv.Update(ctx, Key(h.desk), b, ours)
		}
	}
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("desk %s, epoch %d: %w: %w", h.desk, h.owner.Epoch, ErrTaken, ErrLost)
	}
	if err != nil {
		return nil // not renewed this time: the deadline decides
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause == nil && sent.Before(h.until) { // never revive a lease that ran out
		h.rev, h.until = next, sent.Add(l.lease)
	}
	return nil
}

// ownWrite reads the desk's key and reports its revision when the value
// there is a renewal of this lease (this host, and this epoch, which only
// this lease's renewals carry: a winning write carries 0).
func (h *Lease) ownWrite(ctx context.Context) (uint64, bool) {
	e, err := h.l.kv.Get(ctx, Key(h.desk))
	if err != nil {
		return 0, false
	}
	var o Owner
	if json.Unmarshal(e.Value(), &o) != nil || o.Host != h.l.host || o.Epoch != h.owner.Epoch {
		return 0, false
	}
	return e.Revision(), true
}

// Release ends the lease and deletes the desk's key (only if it is still
// ours), so that a standby takes the desk at once. Call it once the desk
// has stopped and its last write is replicated. A lease already lost is
// only ended.
func (h *Lease) Release(ctx context.Context) error {
	held := h.Holds()
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
	h.mu.Lock()
	rev := h.rev
	h.mu.Unlock()
	h.end(fmt.Errorf("desk %s, epoch %d: %w", h.desk, h.owner.Epoch, ErrReleased))
	if !held {
		return nil
	}
	if err := h.l.kv.Delete(ctx, Key(h.desk), jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("cluster: release desk %s: %w", h.desk, err)
	}
	return nil
}
