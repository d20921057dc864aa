package desk

// A daemon as one host of a cluster (config cluster, docs/SCALING.md):
// every desk of the config runs here only while this host holds its lease
// (desk/cluster). Until it wins the lease, a desk is standby; on winning,
// the desk's WAL is fenced, its folder rebuilt from the stores, and the
// desk started through the ordinary start path; on losing it, the desk
// stops at once and this host stands by again; a clean stop releases
// each lease once its desk has stopped.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory/durable"
)

// clusterHost is the daemon's part in a cluster. The acquirers run in
// goroutines of their own and tell the main loop what they won and lost
// (changes); held and contending belong to the main loop.
type clusterHost struct {
	cfg    config.Cluster
	nc     *nats.Conn
	repl   *cluster.Replicas // the desks' file layer: a desk's folder is written only while its writer is attached
	stores *cluster.Stores   // nil until opened (openStores)
	leases *cluster.Leases   // made once the stores are open
	addr   string            // this host's API address, the leases' value's
	clk    clock.Clock
	bus    *event.Bus
	log    zerolog.Logger
	set    *Set

	changes chan leaseChange
	ctx     context.Context // the acquirers'; cancelled as the shutdown begins
	end     context.CancelFunc
	wg      sync.WaitGroup

	held       map[string]*holding           // the desks this host owns, by name
	contending map[string]context.CancelFunc // the acquirer of each desk, by name
	// seenMu orders an acquirer's standby for an owner it sees against the
	// end of its contention (forget): once forget has cancelled it, none
	// stands the desk by again.
	seenMu   sync.Mutex
	failures map[string]int       // the takeovers of each desk that failed in a row, by name (backoff)
	unknown  map[string]time.Time // when this host, with no folder for the desk, first found the stores knowing nothing of it (cluster.new_desk_grace)
	ingress  Ingress              // nil: no NATS trigger ingress

	compactAfter int           // the WAL records of a desk since its snapshot that make its owner compact it
	scratch      string        // the folder compactions rebuild into (state dir's .compact/<desk>), never a live one
	compacting   chan struct{} // held by the one compaction running (one desk at a time)
}

// DefaultCompactAfter is how many WAL records of a desk since its last
// snapshot make its owner compact it (DaemonOptions.CompactAfter): a
// takeover then replays about this many at most, whatever the history.
const DefaultCompactAfter = 10_000

// compactRetry is how long, in leases, an owner waits after a compaction
// failed before it tries the desk's again.
const compactRetry = 10

// Ingress is the NATS trigger ingress of a cluster host (natsfeed.Feed
// in cluster mode): each desk's consumer bound by its owner only.
type Ingress interface {
	// Bind starts consuming the desk's triggers here; the desk runs.
	Bind(desk string) error
	// Unbind stops consuming them here, handing back what was pulled and
	// not acknowledged, before the desk stops.
	Unbind(desk string)
}

// SetIngress hands the daemon of a cluster host its NATS trigger ingress,
// whose desks it binds while it owns them. Call it from Serve (before the
// desks are contended for); a daemon without a cluster section ignores it.
func (d *Daemon) SetIngress(in Ingress) {
	if d.cl != nil {
		d.cl.ingress = in
	}
}

// bind binds the running desk's NATS trigger consumer here, if any.
func (c *clusterHost) bind(name string) {
	if c.ingress == nil {
		return
	}
	if err := c.ingress.Bind(name); err != nil {
		c.log.Error().Err(err).Str("desk", name).Msg("cluster: bind the desk's NATS trigger consumer: its NATS triggers wait for the next owner")
	}
}

// unbind unbinds the desk's NATS trigger consumer here, if any.
func (c *clusterHost) unbind(name string) {
	if c.ingress != nil {
		c.ingress.Unbind(name)
	}
}

// holding is a desk this host owns: its lease, the writer of its WAL, and
// the end of the goroutine that watches both (watch).
type holding struct {
	lease *cluster.Lease
	w     *cluster.Writer
	end   context.CancelFunc

	// The watch's and its compactions' (compact): the WAL held count
	// records of the desk when its last sequence was base; no compaction
	// before notBefore; busy while one runs.
	mu          sync.Mutex
	base, count uint64
	notBefore   time.Time
	busy        bool
}

// leaseChange is news for the main loop: the stores opened (stores), a
// lease won by an acquirer (lost nil; previous is the owner it saw
// before, if any), or the lease ended or the desk's writer stopped (lost
// its cause).
type leaseChange struct {
	stores   *cluster.Stores
	desk     string
	lease    *cluster.Lease
	previous string
	lost     error
}

// newClusterHost returns the cluster part of a daemon of cfg on nc, whose
// desks write through fsys (wrapped: see clusterHost.repl), or nil without
// a cluster section.
func newClusterHost(cfg *config.Config, nc *nats.Conn, fsys durable.FS, clk clock.Clock, bus *event.Bus, log zerolog.Logger, set *Set, compactAfter int) (*clusterHost, error) {
	if cfg.Cluster == nil {
		return nil, nil
	}
	if nc == nil {
		return nil, errors.New("daemon: the cluster section needs a connection to NATS (the nats section)")
	}
	return &clusterHost{cfg: *cfg.Cluster, nc: nc, repl: cluster.NewReplicas(fsys, filepath.Join(cfg.StateDir, "desks")), clk: clk, bus: bus, log: log,
		set: set, changes: make(chan leaseChange), held: map[string]*holding{},
		contending: map[string]context.CancelFunc{}, failures: map[string]int{}, unknown: map[string]time.Time{},
		compactAfter: cmp.Or(compactAfter, DefaultCompactAfter), scratch: filepath.Join(cfg.StateDir, ".compact"), compacting: make(chan struct{}, 1)}, nil
}

// replicas is how many copies the stores keep when this host creates
// them: 3, or as many servers as the NATS cluster has when fewer (the
// servers the connection knows, its URLs and those the cluster told it
// of); 1 on a server that is no cluster.
func replicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	return max(1, min(3, len(nc.Servers())))
}

// standBy lists every desk named as standby until its lease is won.
func (c *clusterHost) standBy(names []string) {
	c.log.Info().Str("host", c.cfg.Host).Dur("lease", c.cfg.Lease).Strs("desks", names).
		Msg("cluster: this host runs each desk only while it holds its lease; standing by for every desk until then")
	for _, name := range names {
		c.set.Standby(name, nil)
	}
}

// start opens the cluster's stores in the background (opened), trying
// again every lease/3 while NATS does not answer; then the main loop
// makes the leases, this host's API address addr their value's, and
// contends for every desk of the config (storesOpened).
func (c *clusterHost) start(ctx context.Context, addr string) {
	c.ctx, c.end = context.WithCancel(ctx)
	c.addr = addr
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.openStores(c.ctx)
	}()
}

// openStores opens the cluster's stores (creating them if missing), and
// hands them to the main loop.
func (c *clusterHost) openStores(ctx context.Context) {
	var last string
	for {
		stores, n, err := c.tryOpen(ctx)
		if err == nil {
			c.log.Info().Int("replicas", n).Msg("cluster: the stores are open: contending for the desks")
			select {
			case c.changes <- leaseChange{stores: stores}:
			case <-ctx.Done():
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		if err.Error() != last { // once per new error, not every try
			last = err.Error()
			c.log.Warn().Err(err).Dur("retry_every", c.cfg.Renew()).Msg("cluster: the stores cannot be opened yet: every desk stays standby")
		}
		if !c.sleep(ctx, c.cfg.Renew()) {
			return
		}
	}
}

// tryOpen opens the stores once NATS is connected (so that replicas
// counts the cluster's servers); n is the replicas they are created with.
func (c *clusterHost) tryOpen(ctx context.Context) (_ *cluster.Stores, n int, _ error) {
	if !c.nc.IsConnected() {
		return nil, 0, fmt.Errorf("cluster: not connected to NATS (%v)", c.nc.Status())
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: JetStream on the NATS connection: %w", err)
	}
	n = replicas(c.nc)
	stores, err := cluster.Open(ctx, js, n)
	return stores, n, err
}

// storesOpened, in the main loop, makes the leases on the stores opened
// and contends for every desk of cfg.
func (d *Daemon) storesOpened(stores *cluster.Stores) {
	c := d.cl
	leases, err := cluster.NewLeases(stores.Owners, cluster.LeaseConfig{Host: c.cfg.Host, Addr: c.addr, Lease: c.cfg.Lease, Clock: c.clk})
	if err != nil { // the config's host and lease are checked: not seen
		d.o.Log.Error().Err(err).Msg("cluster: the leases cannot be made: every desk stays standby")
		return
	}
	c.stores, c.leases = stores, leases
	for _, name := range sortedNames(d.cur.Load().Desks) {
		c.contend(name)
	}
}

// contend runs the desk's acquirer, unless one runs: it waits for the
// lease, hands it to the main loop, and tells it when the lease ends.
// While it waits, the owners it sees are the desk's in the set.
func (c *clusterHost) contend(name string) { c.contendAfter(name, 0) }

// maxBackoff bounds the wait before a desk whose takeovers keep failing
// is contended for again: this many leases.
const maxBackoff = 8

// backoff is how long the host waits before it contends again for a desk
// whose takeover has failed n times in a row: a lease, doubling with each
// failure up to maxBackoff leases.
func (c *clusterHost) backoff(n int) time.Duration {
	return min(c.cfg.Lease<<min(max(n-1, 0), 3), maxBackoff*c.cfg.Lease)
}

// yieldFirst reports, with the wait left, whether the desk dir, which the
// stores know nothing of and this host has no folder for, is to be left
// to another host for now: for cluster.new_desk_grace on the daemon's
// clock from the first such finding.
func (c *clusterHost) yieldFirst(name string) (time.Duration, bool) {
	now := c.clk.Now()
	since, ok := c.unknown[name]
	if !ok {
		since = now
		c.unknown[name] = now
	}
	left := c.cfg.NewDeskGrace - now.Sub(since)
	return left, left > 0
}

// contendAfter is contend, its acquirer waiting delay on the daemon's
// clock before it contends (a failed takeover's backoff); forget and the
// shutdown end the wait.
func (c *clusterHost) contendAfter(name string, delay time.Duration) {
	if _, ok := c.contending[name]; ok || c.leases == nil || c.ctx.Err() != nil {
		return // contending already, or the stores are not open yet (storesOpened contends)
	}
	if _, ok := c.held[name]; ok {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.contending[name] = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if delay > 0 && !c.sleep(ctx, delay) {
			return
		}
		c.acquire(ctx, name)
	}()
}

// sleep waits d on the daemon's clock; false when ctx ended first.
func (c *clusterHost) sleep(ctx context.Context, d time.Duration) bool {
	return clock.Sleep(ctx, c.clk, d) == nil
}

// acquire is the desk's acquirer (contend).
func (c *clusterHost) acquire(ctx context.Context, name string) {
	var previous string // the owner seen last, and its epoch
	var seen uint64
	var lease *cluster.Lease
	for lease == nil {
		var err error
		lease, err = c.leases.Acquire(ctx, name, func(sb cluster.Standby) {
			o := ownerOf(sb.Owner)
			c.seenMu.Lock()
			if ctx.Err() != nil { // forgotten (its file left the config): a renewal seen late stands nothing by
				c.seenMu.Unlock()
				return
			}
			c.set.Standby(name, &o)
			c.seenMu.Unlock()
			if sb.Owner.Host != previous || sb.Owner.Epoch != seen { // a new owner, not its renewal
				c.log.Info().Str("desk", name).Str("owner", sb.Owner.Host).Uint64("epoch", sb.Owner.Epoch).Str("addr", sb.Owner.Addr).
					Msg("cluster: standing by for the desk, which another host owns")
			}
			previous, seen = sb.Owner.Host, sb.Owner.Epoch
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil { // the watch ended (the connection is down): try again
			c.log.Warn().Err(err).Str("desk", name).Dur("retry_in", c.cfg.Renew()).Msg("cluster: contend for the desk")
			if !c.sleep(ctx, c.cfg.Renew()) {
				return
			}
		}
	}
	select {
	case c.changes <- leaseChange{desk: name, lease: lease, previous: previous}:
	case <-ctx.Done():
		c.release(lease) // never handed over: nothing ran under it
	}
}

// watch tells the main loop when the lease of the desk h holds ends, or
// its writer stops (a write refused as fenced, or not known to be
// replicated: nothing more may follow it), until ctx ends. The writer is
// looked at every renewal period.
func (c *clusterHost) watch(ctx context.Context, name string, h *holding) {
	var lost error
	for lost == nil {
		t := c.clk.NewTimer(c.cfg.Renew())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-h.lease.Lost():
			lost = h.lease.Err()
		case <-t.C():
			if lost = h.w.Err(); lost == nil {
				c.maybeCompact(ctx, name, h)
			}
		}
		t.Stop()
	}
	select {
	case c.changes <- leaseChange{desk: name, lease: h.lease, lost: lost}:
	case <-ctx.Done():
	}
}

// maybeCompact starts a compaction of the desk h holds in the background
// (compact) when its WAL may hold compactAfter records since the last
// snapshot and no other compaction runs; the watch goes on meanwhile.
func (c *clusterHost) maybeCompact(ctx context.Context, name string, h *holding) {
	last, _ := h.w.State()
	h.mu.Lock()
	due := !h.busy && last-h.base+h.count >= uint64(c.compactAfter) && !c.clk.Now().Before(h.notBefore)
	h.mu.Unlock()
	if !due {
		return
	}
	select {
	case c.compacting <- struct{}{}:
	default:
		return // another desk's runs: the next look
	}
	h.mu.Lock()
	h.busy = true
	h.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.compacting }()
		c.compact(ctx, name, h, last)
	}()
}

// compact counts the desk's WAL records (as of its last sequence last)
// and, past compactAfter, compacts it: a new snapshot from the stores,
// rebuilt in the scratch folder, and the records before it purged. A
// failure is logged and tried again after compactRetry leases; the desk
// runs on either way.
func (c *clusterHost) compact(ctx context.Context, name string, h *holding, last uint64) {
	n, err := cluster.Records(ctx, c.stores, name)
	var r cluster.Rebuilt
	if err == nil && n >= uint64(c.compactAfter) {
		if err = os.MkdirAll(c.scratch, 0o750); err == nil {
			scratch := filepath.Join(c.scratch, name)
			if err = os.RemoveAll(scratch); err == nil { // what a crash mid-compaction left
				r, err = cluster.Compact(ctx, c.stores, name, scratch)
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.busy = false
	switch {
	case err != nil:
		h.notBefore = c.clk.Now().Add(compactRetry * c.cfg.Lease)
		if ctx.Err() == nil {
			c.log.Error().Err(err).Str("desk", name).Dur("retry_in", compactRetry*c.cfg.Lease).
				Msg("cluster: compact the desk's WAL (the desk runs on; tried again later)")
		}
	case r.Through > 0:
		h.base, h.count = r.Through, 1 // the record the snapshot covers stays
		c.log.Info().Str("desk", name).Uint64("snapshot", r.Through).Int("records", r.Records).Uint64("before", n).
			Msg("cluster: the desk's WAL compacted: a new snapshot, the records before it purged")
	default:
		h.base, h.count = last, n
	}
}

// ownerOf is a lease's owner as the set lists it.
func ownerOf(o cluster.Owner) Owner {
	return Owner{Host: o.Host, Epoch: o.Epoch, Since: o.Since, Addr: o.Addr}
}

// stopContending stops every acquirer (no desk is taken from now on) and
// waits for them; leases already held stay, for release.
func (c *clusterHost) stopContending() {
	if c.end == nil {
		return
	}
	c.end()
	c.wg.Wait()
	clear(c.contending)
}

// forget stops the desk's acquirer and forgets it (its file left the
// config); a lease held is released by the desk's exit (releaseDesk).
func (c *clusterHost) forget(name string) {
	c.unbind(name) // before the desk stops
	delete(c.failures, name)
	delete(c.unknown, name)
	if cancel, ok := c.contending[name]; ok {
		c.seenMu.Lock()
		cancel()
		c.seenMu.Unlock()
		delete(c.contending, name)
	}
	if _, ok := c.held[name]; !ok {
		c.set.Unstandby(name)
	}
}

// release releases lease and tells it (desk.released); a lease lost
// meanwhile is only ended.
func (c *clusterHost) release(lease *cluster.Lease) {
	held := lease.Holds()
	if err := lease.Release(context.WithoutCancel(c.ctx)); err != nil {
		c.log.Error().Err(err).Str("desk", lease.Desk()).Uint64("epoch", lease.Epoch()).
			Msg("cluster: release the desk's lease (a standby takes it once the lease has run out)")
		return
	}
	if held {
		event.Publish(c.bus, event.DeskReleased{Header: event.Header{At: c.clk.Now(), Desk: lease.Desk()}, Host: c.cfg.Host, Epoch: lease.Epoch()})
	}
}

// releaseDesk releases the lease of the desk called name, if held, once
// the desk has stopped and its files are closed: its folder is written no
// more here.
func (c *clusterHost) releaseDesk(name string) {
	h, ok := c.held[name]
	if !ok {
		return
	}
	c.unhold(name, h)
	c.release(h.lease)
	c.set.Unstandby(name)
}

// unhold forgets the desk h holds: its folder is written no more here,
// and its watch ends.
func (c *clusterHost) unhold(name string, h *holding) {
	c.unbind(name)
	delete(c.held, name)
	c.repl.Detach(name)
	if h.end != nil {
		h.end()
	}
}

// releaseAll releases every lease held (the shutdown, once every desk has
// stopped and closed its files).
func (c *clusterHost) releaseAll() {
	for _, name := range sortedNames(c.held) {
		c.releaseDesk(name)
	}
}

// apiAddr is the address of the front end's first TCP listener, which
// the other hosts send a desk's clients to (the 421's addr); empty when
// it has none.
func apiAddr(front Frontend) string {
	a, ok := front.(interface{ Addrs() []string })
	if !ok {
		return ""
	}
	for _, addr := range a.Addrs() {
		if _, _, err := net.SplitHostPort(addr); err == nil {
			return addr
		}
	}
	return ""
}

// leaseChanged handles an acquirer's news in the main loop.
func (d *Daemon) leaseChanged(ctx, deskCtx context.Context, ch leaseChange) {
	if ch.stores != nil {
		d.storesOpened(ch.stores)
		return
	}
	if ch.lost != nil {
		d.leaseLost(ch)
		return
	}
	d.leaseWon(ctx, deskCtx, ch)
}

// leaseWon takes over a desk whose lease this host has won: it fences the
// desk's WAL, rebuilds the desk's folder from the stores, and starts the
// desk as a restart does (queued triggers run, one with its message and no
// reply is interrupted, a rollover resumes).
func (d *Daemon) leaseWon(ctx, deskCtx context.Context, ch leaseChange) {
	c, f, lease := d.cl, d.fleet, ch.lease
	delete(c.contending, ch.desk)
	cfg := d.cur.Load()
	dc, ok := cfg.Desks[ch.desk]
	if !ok {
		c.release(lease)
		return
	}
	h := &holding{lease: lease}
	c.held[ch.desk] = h
	f.set.Own(ch.desk, ownerOf(lease.Owner())) // starting here: 503, not a 421 naming the host that let it go
	log := d.o.Log.With().Str("desk", ch.desk).Uint64("epoch", lease.Epoch()).Logger()
	fail := func(err error) { // a takeover's trouble (NATS, the stores, the disk) may pass: contend again later
		c.failures[ch.desk]++
		wait := c.backoff(c.failures[ch.desk])
		log.Error().Err(err).Int("failures", c.failures[ch.desk]).Dur("retry_in", wait).
			Msg("cluster: the desk's lease was won but the desk cannot be taken over here; released, contending again after a backoff")
		f.failed(ch.desk, err) // before the release: the desk goes from starting to failed, never through no state
		c.releaseDesk(ch.desk)
		c.contendAfter(ch.desk, wait)
	}
	var err error
	if h.w, err = cluster.Fence(ctx, c.stores, ch.desk, c.cfg.Host, lease); err != nil {
		fail(err)
		return
	}
	dir := folderOf(cfg, ch.desk)
	if !holdsFiles(dir) {
		known, err := cluster.Known(ctx, c.stores, ch.desk)
		if err != nil {
			fail(err)
			return
		}
		if left, yield := c.yieldFirst(ch.desk); yield && !known {
			log.Info().Dur("retry_in", left).Msg("cluster: the stores know nothing of the desk and this host has no folder for it: released, " +
				"for a host with its folder to take it first; this host starts it new if none has once the grace is over")
			c.unhold(ch.desk, h) // nothing ran under the lease: no desk.released
			if err := lease.Release(context.WithoutCancel(c.ctx)); err != nil {
				log.Warn().Err(err).Msg("cluster: release the lease of a desk left to a host with its folder (it runs out)")
			}
			f.set.Standby(ch.desk, nil)
			c.contendAfter(ch.desk, left)
			return
		}
	}
	delete(c.unknown, ch.desk)
	// A cluster starts from the folder a host has today: the first owner's
	// local folder becomes the desk's snapshot when the stores hold nothing
	// of it.
	if seeded, err := cluster.Seed(ctx, c.stores, ch.desk, dir, h.w); err != nil {
		fail(err)
		return
	} else if seeded {
		log.Info().Str("folder", dir).Msg("cluster: the stores held nothing of the desk: its local folder is its first snapshot")
	}
	if err := c.rebuild(ctx, dir, ch.desk); err != nil {
		fail(err)
		return
	}
	c.repl.Attach(ch.desk, h.w)
	if err := durable.MkdirAll(c.repl, dir, 0o750); err != nil { // a desk new to the cluster and this host
		fail(err)
		return
	}
	wctx, end := context.WithCancel(c.ctx)
	h.end = end
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.watch(wctx, ch.desk, h)
	}()
	event.Publish(d.o.Bus, event.DeskAcquired{Header: event.Header{At: d.o.Clock.Now(), Desk: ch.desk}, Host: c.cfg.Host,
		Epoch: lease.Epoch(), Previous: ch.previous})
	run, err := f.start(deskCtx, cfg, dc, nil)
	if err != nil {
		c.releaseDesk(ch.desk)
		d.dropDesk(ch.desk)
		return
	}
	if err := f.awaitStarted(ctx, run); err != nil {
		f.stop(run, errors.New("it failed to start"))
		d.dropDesk(ch.desk) // its exit closes its files and releases the lease
		return
	}
	delete(c.failures, ch.desk)
	c.bind(ch.desk)
	d.respool(ctx)
	log.Info().Str("previous", ch.previous).Msg("cluster: the desk runs on this host, which owns it")
}

// holdsFiles reports whether the desk folder dir holds a file (other
// than a temporary one) anywhere below it: a desk's history. A folder
// missing, or holding only empty folders (made by a start path before
// the lease was won), holds none.
func holdsFiles(dir string) bool {
	found := errors.New("found")
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: looked past, as if absent
		}
		if e.Type().IsRegular() && !durable.IsTemp(e.Name()) {
			return found
		}
		return nil
	})
	return errors.Is(err, found)
}

// respool has the spool take the inbox files of the desks running here
// now (a cluster host's change with each desk won or lost).
func (d *Daemon) respool(ctx context.Context) {
	if d.spool.running() {
		if err := d.spool.start(ctx); err != nil {
			d.o.Log.Error().Err(err).Msg("cluster: the inbox folders of the desks this host runs")
		}
	}
}

// leaseLost stops the desk whose lease has ended at once: nothing more
// it writes can become durable, its running turn's reply is dropped. The
// host stands by for the desk again once it has stopped (exited).
func (d *Daemon) leaseLost(ch leaseChange) {
	c, f := d.cl, d.fleet
	h, ok := c.held[ch.desk]
	if !ok || h.lease != ch.lease {
		return // a lease released meanwhile
	}
	c.unhold(ch.desk, h)  // from here on, the desk's folder refuses every write
	if ch.lease.Holds() { // the writer stopped under a lease still held: let it go, for a fresh fence
		if err := ch.lease.Release(context.WithoutCancel(c.ctx)); err != nil {
			d.o.Log.Warn().Err(err).Str("desk", ch.desk).Msg("cluster: release the lease of a desk whose writer stopped")
		}
	}
	log := d.o.Log.With().Str("desk", ch.desk).Uint64("epoch", ch.lease.Epoch()).Logger()
	event.Publish(d.o.Bus, event.DeskLost{Header: event.Header{At: d.o.Clock.Now(), Desk: ch.desk}, Host: c.cfg.Host,
		Epoch: ch.lease.Epoch(), Reason: ch.lost.Error()})
	var storesLost error
	if !errors.Is(ch.lost, cluster.ErrFenced) && !errors.Is(ch.lost, cluster.ErrTaken) { // not renewed, or a write not known replicated: the stores may not answer
		storesLost = fmt.Errorf("cluster: the desk stopped: its writes cannot be made durable in the cluster's stores (quorum lost?): %w", ch.lost)
		f.set.StoresLost(ch.desk, StorageStatus{Error: storesLost.Error(), Since: d.o.Clock.Now()}) // before the standby: /healthz never shows the desk stood by and the stores well
	}
	f.set.Standby(ch.desk, nil)
	if storesLost != nil {
		event.Publish(d.o.Bus, event.StorageFailed{Header: event.Header{At: d.o.Clock.Now(), Desk: ch.desk}, Error: storesLost.Error()})
	}
	run, ok := f.runs[ch.desk]
	if !ok {
		c.contend(ch.desk)
		return
	}
	if r := run.desk.Status().Running; r != nil && r.Trigger != "" {
		log.Error().Str("trigger", r.Trigger).Err(ch.lost).
			Msg("cluster: the desk's lease is lost during a turn: its reply is dropped; the new owner shows the trigger interrupted")
	}
	run.fenced = true
	f.stop(run, fmt.Errorf("its lease is lost: %w", ch.lost))
	run.desk.CutShort() // at once: nothing it would record can become durable
}

// fencedExit handles the exit of a desk stopped because its lease was
// lost: its files are closed, its inbox is no longer taken, and this host
// contends for it again.
func (d *Daemon) fencedExit(ctx context.Context, run *deskRun) {
	f := d.fleet
	f.close(run)
	d.respool(ctx)
	if _, ok := d.cur.Load().Desks[run.name]; ok {
		d.cl.contend(run.name)
	} else {
		f.set.Unstandby(run.name)
	}
}

// rebuild makes the desk's folder dir what the cluster's stores hold of
// it: it rebuilds it from the latest snapshot and the WAL into a fresh
// folder beside it (desks/.<desk>.rebuild), then moves the local folder
// aside (desks/.<desk>.replaced, kept until the next takeover) and the
// rebuilt one in. When the stores
// hold nothing of the desk (no snapshot, no record but fences), the local
// folder is the desk's, and stays.
func (c *clusterHost) rebuild(ctx context.Context, dir, name string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return fmt.Errorf("cluster: rebuild desk %s: %w", name, err)
	}
	fresh := filepath.Join(parent, "."+name+".rebuild")
	if err := os.RemoveAll(fresh); err != nil { // what a crash mid-rebuild left
		return fmt.Errorf("cluster: rebuild desk %s: %w", name, err)
	}
	r, err := cluster.Rebuild(ctx, c.stores, name, fresh, 0)
	if err != nil {
		_ = os.RemoveAll(fresh)
		return err
	}
	if r.Snapshot == 0 && r.Records == 0 {
		return os.RemoveAll(fresh)
	}
	aside := filepath.Join(parent, "."+name+".replaced")
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("cluster: rebuild desk %s: %w", name, err)
	}
	if err := os.Rename(dir, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster: rebuild desk %s: move the local folder aside: %w", name, err)
	}
	if err := os.Rename(fresh, dir); err != nil {
		return fmt.Errorf("cluster: rebuild desk %s: move the rebuilt folder in: %w", name, err)
	}
	pd, err := os.Open(parent)
	if err != nil {
		return fmt.Errorf("cluster: rebuild desk %s: %w", name, err)
	}
	defer pd.Close()
	if err := pd.Sync(); err != nil {
		return fmt.Errorf("cluster: rebuild desk %s: fsync %s: %w", name, parent, err)
	}
	c.log.Info().Str("desk", name).Uint64("snapshot", r.Snapshot).Uint64("through", r.Through).Int("records", r.Records).
		Str("replaced", aside).Msg("cluster: the desk's folder rebuilt from the cluster's stores")
	return nil
}

// releaseDesk releases the lease of the desk called name, if this host is
// in a cluster and holds it: the desk has stopped for good here.
func (d *Daemon) releaseDesk(name string) {
	if d.cl != nil {
		d.cl.releaseDesk(name)
	}
}
