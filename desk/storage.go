package desk

import (
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/triggers"
)

// Storage returns the desk's storage trouble, or nil while its writes
// succeed.
func (d *Desk) Storage() *StorageStatus {
	d.storeMu.Lock()
	defer d.storeMu.Unlock()
	if d.storeErr == nil {
		return nil
	}
	return &StorageStatus{Error: d.storeErr.Error(), Since: d.storeSince, DiskFull: durable.IsDiskFull(d.storeErr)}
}

// storageFailed records that a write failed: the desk stalls (it takes no
// turn) until retryStorage finds that writes succeed again. The first
// failure of a stall is announced.
func (d *Desk) storageFailed(err error) {
	d.storeMu.Lock()
	first := d.storeErr == nil
	d.storeErr = err
	d.failures++
	if first {
		d.storeSince, d.retryWait = d.o.Clock.Now(), 0
	}
	d.storeMu.Unlock()
	if first {
		event.Publish(d.o.Bus, event.StorageFailed{Header: d.header(), Error: err.Error(), DiskFull: durable.IsDiskFull(err)})
	}
}

// storageWorks tells a stalled desk that a write just succeeded, so that
// it checks at once whether it can go on.
func (d *Desk) storageWorks() {
	if d.Storage() != nil {
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
