package desk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/triggers"
)

// Storage returns the desk's storage trouble, or nil while its writes
// succeed and its state folder has room: a failed write (the desk
// stalls), or else free space below the threshold of the state folder's
// SpaceProbe (the desk runs on; the status shows it before a write
// fails).
func (d *Desk) Storage() *StorageStatus {
	if st := d.writeTrouble(); st != nil {
		return st
	}
	if d.o.Space != nil {
		return d.o.Space.Storage()
	}
	return nil
}

// writeTrouble is the failed write that stalls the desk, or nil.
func (d *Desk) writeTrouble() *StorageStatus {
	d.storeMu.Lock()
	defer d.storeMu.Unlock()
	if d.storeErr == nil {
		return nil
	}
	return &StorageStatus{Error: d.storeErr.Error(), Since: d.storeSince, DiskFull: durable.IsDiskFull(d.storeErr)}
}

// stalled reports whether a failed write stalls the desk (it takes no
// turn until retryStorage succeeds). Low free space does not stall it.
func (d *Desk) stalled() bool { return d.writeTrouble() != nil }

// DefaultMinFreeSpace is the free space of the state folder's file system
// below which deskd reports its storage degraded (SpaceProbe.Min): room
// for a day of any desk's sessions and ledgers, so the status and
// /healthz show the trouble before the first write fails.
const DefaultMinFreeSpace = 256 << 20

// DefaultSpaceEvery is how often a SpaceProbe looks at the free space.
const DefaultSpaceEvery = 10 * time.Second

// Statfs returns the bytes free to deskd (not the root's reserve) and the
// size of the file system that holds dir.
type Statfs func(dir string) (free, size uint64, err error)

// statfs is the operating system's Statfs.
func statfs(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// SpaceProbe watches the free space of the state folder's file system on
// deskd's clock: every Every, it asks Statfs, and while the free space is
// below Min every desk's Storage shows it ("low space: ..."), /healthz
// answers 503 degraded, and storage.low is announced once (storage.space_ok
// when it is back above). It is safe for concurrent use.
type SpaceProbe struct {
	// Dir is the folder whose file system is watched (the state folder).
	Dir string
	// Min is the threshold in bytes (0: DefaultMinFreeSpace).
	Min uint64
	// Every is the interval between looks (0: DefaultSpaceEvery).
	Every time.Duration
	// Clock is deskd's clock; Bus receives storage.low and storage.space_ok.
	Clock clock.Clock
	Bus   *event.Bus
	// Statfs reads the free space (nil: the operating system's). Tests
	// give it fake numbers.
	Statfs Statfs

	mu    sync.Mutex
	known bool // a look has succeeded
	free  uint64
	low   bool
	since time.Time // when the space fell below Min
}

// min returns the threshold in force.
func (p *SpaceProbe) min() uint64 {
	if p.Min == 0 {
		return DefaultMinFreeSpace
	}
	return p.Min
}

// Run looks at once, then every Every, until ctx ends.
func (p *SpaceProbe) Run(ctx context.Context) {
	every := p.Every
	if every <= 0 {
		every = DefaultSpaceEvery
	}
	for {
		p.Probe()
		if err := clock.Sleep(ctx, p.Clock, every); err != nil {
			return
		}
	}
}

// Probe looks at the free space once and announces a crossing of Min. A
// failed look changes nothing (the writes' own failures still show).
func (p *SpaceProbe) Probe() {
	stat := p.Statfs
	if stat == nil {
		stat = statfs
	}
	free, _, err := stat(p.Dir)
	if err != nil {
		return
	}
	now := p.Clock.Now()
	p.mu.Lock()
	wasLow := p.low
	p.known, p.free, p.low = true, free, free < p.min()
	if p.low && !wasLow {
		p.since = now
	}
	since := p.since
	p.mu.Unlock()
	h := event.Header{At: now}
	switch {
	case p.low && !wasLow:
		event.Publish(p.Bus, event.StorageLow{Header: h, Dir: p.Dir, FreeBytes: free, MinFreeBytes: p.min()})
	case !p.low && wasLow:
		event.Publish(p.Bus, event.StorageSpaceOK{Header: h, Dir: p.Dir, FreeBytes: free, MinFreeBytes: p.min(), Since: since})
	}
}

// FreeBytes returns the free space of the last look; ok is false before
// one succeeded.
func (p *SpaceProbe) FreeBytes() (free uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.free, p.known
}

// Storage returns the low space as a desk's storage trouble, or nil while
// the free space is at least Min (or unknown).
func (p *SpaceProbe) Storage() *StorageStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.low {
		return nil
	}
	return &StorageStatus{
		Error: fmt.Sprintf("low space: %s free on %s, below %s", mib(p.free), p.Dir, mib(p.min())),
		Since: p.since, LowSpace: true, FreeBytes: p.free,
	}
}

// mib is n bytes in MiB, rounded down.
func mib(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }

// storageFailed records that a write failed: the desk stalls (it takes no
// turn) until retryStorage finds that writes succeed again. The first
// failure of a stall is announced, unless the write was refused because
// another host owns the desk now (cluster.ErrFenced): that is the loss of
// its lease, announced as desk.lost, and the disk and the stores are
// fine.
func (d *Desk) storageFailed(err error) {
	d.storeMu.Lock()
	first := d.storeErr == nil
	d.storeErr = err
	d.failures++
	if first {
		d.storeSince, d.retryWait = d.o.Clock.Now(), 0
	}
	d.storeMu.Unlock()
	if first && !errors.Is(err, cluster.ErrFenced) {
		event.Publish(d.o.Bus, event.StorageFailed{Header: d.header(), Error: err.Error(), DiskFull: durable.IsDiskFull(err)})
	}
}

// storageWorks tells a stalled desk that a write just succeeded, so that
// it checks at once whether it can go on.
func (d *Desk) storageWorks() {
	if d.stalled() {
		d.poke()
	}
}

// write appends r to the ledger; when that fails, r is owed (written by
// retryStorage once writes succeed) and the desk stalls.
func (d *Desk) write(r triggers.Record) {
	if err := d.ledger.Append(r); err != nil {
		d.storageFailed(err)
		d.owe(r)
	}
}

// note is write without the fsync, for a record a restart can rebuild from
// the session file (an answer the session holds: see recover). The next
// write makes it durable with itself, in order.
func (d *Desk) note(r triggers.Record) {
	if err := d.ledger.Note(r); err != nil {
		d.storageFailed(err)
		d.owe(r)
	}
}

// owe keeps r for retryStorage to write.
func (d *Desk) owe(r triggers.Record) {
	d.storeMu.Lock()
	defer d.storeMu.Unlock()
	d.owed = append(d.owed, r)
}

// nextRetry returns how long the loop waits before retryStorage: doubling
// from retryFirst up to retryMax over a stall.
func (d *Desk) nextRetry() time.Duration {
	d.storeMu.Lock()
	defer d.storeMu.Unlock()
	if d.retryWait == 0 {
		d.retryWait = retryFirst
	} else {
		d.retryWait = min(2*d.retryWait, retryMax)
	}
	return d.retryWait
}

// retryStorage ends a stall if writes succeed again: it writes the records
// the desk owes, in order, probes the disk, then takes up from the ledger
// every trigger it says is waiting that the queue lost on the way (one
// taken off the queue for a turn whose first record failed). It reports
// whether the desk may go on.
func (d *Desk) retryStorage() bool {
	d.storeMu.Lock()
	owed, failures := d.owed, d.failures
	d.storeMu.Unlock()
	for i, r := range owed {
		if err := d.ledger.Append(r); err != nil {
			d.storeMu.Lock()
			d.owed = append(owed[i:len(owed):len(owed)], d.owed[len(owed):]...)
			d.storeErr = err
			d.storeMu.Unlock()
			return false
		}
	}
	d.storeMu.Lock()
	d.owed = d.owed[len(owed):]
	d.storeMu.Unlock()
	if err := d.ledger.Probe(); err != nil {
		d.storeMu.Lock()
		d.storeErr = err
		d.storeMu.Unlock()
		return false
	}
	requeued := d.requeueFromLedger()
	d.storeMu.Lock()
	if d.failures != failures || len(d.owed) > 0 {
		// A write failed meanwhile (a schedule's record, say): still
		// stalled; the next retry writes what that one owes.
		d.storeMu.Unlock()
		return false
	}
	since := d.storeSince
	d.storeErr, d.storeSince, d.retryWait = nil, time.Time{}, 0
	d.storeMu.Unlock()
	event.Publish(d.o.Bus, event.StorageRecovered{Header: d.header(), Since: since, Requeued: requeued})
	return true
}

// requeueFromLedger queues every trigger the ledger says is queued or
// running that is not in the queue: the ledger is the truth. Only the
// loop calls it, between turns, so no trigger of it is running.
func (d *Desk) requeueFromLedger() int {
	// Under submitMu, so that no Submit adds a trigger between the look
	// at the queue and the look at the ledger.
	d.submitMu.Lock()
	defer d.submitMu.Unlock()
	in := map[string]bool{}
	for _, t := range d.queue.Items() {
		in[t.ID] = true
	}
	n := 0
	for _, it := range d.ledger.Unfinished() {
		if (it.State == triggers.StateQueued || it.State == triggers.StateRunning) && !in[it.Trigger.ID] {
			d.queue.Restore(it.Trigger)
			n++
		}
	}
	return n
}

// announceDamage announces the damage OpenLedger found in the ledger: a
// torn tail set aside, bad lines skipped.
func (d *Desk) announceDamage() {
	torn, skipped := d.ledger.Damage()
	if torn == nil && len(skipped) == 0 {
		return
	}
	ev := event.FileTorn{Header: d.header(), Path: d.ledger.Path(), Skipped: len(skipped)}
	if torn != nil {
		ev.Offset, ev.Bytes, ev.SavedTo = torn.Offset, torn.Bytes, torn.SavedTo
	}
	event.Publish(d.o.Bus, ev)
}
