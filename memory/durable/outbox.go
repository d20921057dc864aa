package durable

import (
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
)

// An Outbox is a durable, bounded queue of items waiting to be sent, in
// an append-only Log. Its file holds two kinds of line, in the order they
// happened: an entry (an item with its seq, 1, 2, ...) and a mark (every
// entry up to its seq was sent, or given up). A restart finds waiting
// exactly the entries after the last mark. A compaction rewrites the file
// as one mark and the entries still waiting: it happens when what is
// marked takes more than a quarter of MaxBytes, and before an entry would
// be refused for want of room. The entries are also held in memory (the
// file is read once, at open), so its memory is bounded by MaxBytes as
// its file is. An Outbox is safe for concurrent use.
type Outbox[T any] struct {
	log  *Log
	opts OutboxOptions[T]

	mu        sync.Mutex
	pending   []OutboxEntry[T] // waiting, in seq order
	pendBytes int64            // what pending takes in the file
	fileBytes int64            // the file's length
	next      uint64           // the seq of the next entry
	marked    uint64           // the last seq marked
	// resumed is the last seq the file held at open: an entry up to it
	// may have been sent before the restart.
	resumed uint64
	// floor is what the file holds besides pending just after a
	// compaction (its mark): a compaction frees nothing below it.
	floor int64
	wake  chan struct{}
	// dirty says entries were written since the last fsync.
	dirty bool

	// shown are len(pending) and fileBytes as of the last change, read
	// without mu: Counts must not wait for a stalled fsync that holds mu.
	shownWaiting, shownBytes atomic.Int64
}

// OutboxEntry is an item waiting in an Outbox.
type OutboxEntry[T any] struct {
	// Seq is the entry's place in the outbox, from 1.
	Seq uint64
	// Item is what the caller added.
	Item T
	line []byte // its line in the file, without '\n'
}

// size is what the entry takes in the file.
func (e OutboxEntry[T]) size() int64 { return int64(len(e.line)) + 1 }

// OutboxOptions say where an Outbox's file is and how its lines read.
type OutboxOptions[T any] struct {
	// FS is the file system; nil is the OS's.
	FS FS
	// Path is the file, created with Perm if it does not exist.
	Path string
	Perm fs.FileMode
	// MaxBytes bounds the file.
	MaxBytes int64
	// Name names the outbox in errors ("the notification outbox").
	Name string
	// SyncAdd makes Add fsync each entry before it returns; otherwise an
	// entry is written (the kernel has it) and Flush fsyncs it.
	SyncAdd bool
	// Encode returns the line of entry seq holding item, without '\n'.
	Encode func(seq uint64, item T) ([]byte, error)
	// Mark returns the line saying every entry up to seq is done.
	Mark func(seq uint64) []byte
	// Decode reads a line: an entry (seq > 0) or a mark (mark > 0); ok
	// is false for a line that is neither, which opening sets aside.
	Decode func(line []byte) (seq, mark uint64, item T, ok bool)
}

// OpenOutbox opens (creating it) the outbox file and reads what waits in
// it. The Scan says what damage was found and set aside.
func OpenOutbox[T any](opts OutboxOptions[T]) (*Outbox[T], Scan, error) {
	type rec struct {
		seq, mark uint64
		item      T
	}
	var recs []rec
	valid := func(line []byte) bool {
		seq, mark, item, ok := opts.Decode(line)
		if !ok || (seq == 0) == (mark == 0) {
			return false
		}
		recs = append(recs, rec{seq, mark, item})
		return true
	}
	log, sc, err := OpenLog(opts.FS, opts.Path, opts.Perm, valid)
	if err != nil {
		return nil, Scan{}, fmt.Errorf("open %s %s: %w", opts.Name, opts.Path, err)
	}
	o := &Outbox[T]{log: log, opts: opts, next: 1, wake: make(chan struct{}, 1)}
	for i, r := range recs {
		o.fileBytes = sc.Offsets[i] + int64(len(sc.Records[i])) + 1
		o.load(r.seq, r.mark, r.item, sc.Records[i])
	}
	o.resumed = o.next - 1
	o.show()
	return o, sc, nil
}

// load takes one line of the file, read in order, into o.
func (o *Outbox[T]) load(seq, mark uint64, item T, line []byte) {
	if mark > 0 {
		o.marked = max(o.marked, mark)
		o.next = max(o.next, mark+1)
		for len(o.pending) > 0 && o.pending[0].Seq <= o.marked {
			o.pendBytes -= o.pending[0].size()
			o.pending = o.pending[1:]
		}
		return
	}
	o.next = max(o.next, seq+1)
	if seq <= o.marked {
		return
	}
	e := OutboxEntry[T]{Seq: seq, Item: item, line: append([]byte(nil), line...)}
	o.pending = append(o.pending, e)
	o.pendBytes += e.size()
}

// show publishes the counts for Counts. o.mu must be held.
func (o *Outbox[T]) show() {
	o.shownWaiting.Store(int64(len(o.pending)))
	o.shownBytes.Store(o.fileBytes)
}

// Add keeps item (fsynced if SyncAdd). It returns false, keeping nothing,
// when the entry would take the file past MaxBytes (after a compaction of
// what is marked), or with the error when the file refused it.
func (o *Outbox[T]) Add(item T) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line, err := o.opts.Encode(o.next, item)
	if err != nil {
		return false, fmt.Errorf("encode an entry for %s: %w", o.opts.Name, err)
	}
	e := OutboxEntry[T]{Seq: o.next, Item: item, line: line}
	if o.fileBytes+e.size() > o.opts.MaxBytes && o.fileBytes-o.pendBytes > o.floor {
		if err := o.compact(); err != nil {
			return false, err
		}
	}
	if o.fileBytes+e.size() > o.opts.MaxBytes {
		return false, nil
	}
	if err := o.log.Append(line, o.opts.SyncAdd); err != nil {
		return false, fmt.Errorf("append to %s %s: %w", o.opts.Name, o.log.Path(), err)
	}
	o.dirty = !o.opts.SyncAdd
	o.next++
	o.pending = append(o.pending, e)
	o.pendBytes += e.size()
	o.fileBytes += e.size()
	o.show()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// Flush fsyncs the entries written since the last Flush, if any: one
// fsync for all of them. It does not hold the outbox meanwhile, so Adds
// go on.
func (o *Outbox[T]) Flush() error {
	o.mu.Lock()
	dirty := o.dirty
	o.dirty = false
	o.mu.Unlock()
	if !dirty {
		return nil
	}
	if err := o.log.Sync(); err != nil {
		o.mu.Lock()
		o.dirty = true
		o.mu.Unlock()
		return fmt.Errorf("fsync %s %s: %w", o.opts.Name, o.log.Path(), err)
	}
	return nil
}

// Wake has a value after an Add, for a sender waiting for an entry.
func (o *Outbox[T]) Wake() <-chan struct{} { return o.wake }

// Head returns the oldest waiting entry.
func (o *Outbox[T]) Head() (OutboxEntry[T], bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 {
		return OutboxEntry[T]{}, false
	}
	return o.pending[0], true
}

// WasResumed says whether entry seq was in the file at open: sent before
// the restart, perhaps.
func (o *Outbox[T]) WasResumed(seq uint64) bool { return seq <= o.resumed }

// Finish removes the oldest entry, seq, sent or given up, and marks that
// in the file (without an fsync: a mark lost to a crash only sends the
// entry again). It compacts the file when what is marked takes more than
// a quarter of MaxBytes. It returns how many entries still wait.
func (o *Outbox[T]) Finish(seq uint64) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 || o.pending[0].Seq != seq {
		return len(o.pending), nil
	}
	o.pendBytes -= o.pending[0].size()
	o.pending[0] = OutboxEntry[T]{}
	o.pending = o.pending[1:]
	o.marked = seq
	defer o.show()
	line := o.opts.Mark(seq)
	if err := o.log.Append(line, false); err != nil {
		return len(o.pending), fmt.Errorf("mark entry %d done in %s %s: %w", seq, o.opts.Name, o.log.Path(), err)
	}
	o.fileBytes += int64(len(line)) + 1
	if o.fileBytes-o.pendBytes-o.floor > o.opts.MaxBytes/4 {
		if err := o.compact(); err != nil {
			return len(o.pending), err
		}
	}
	return len(o.pending), nil
}

// compact rewrites the file as the mark and the waiting entries. o.mu
// must be held.
func (o *Outbox[T]) compact() error {
	recs := make([][]byte, 0, len(o.pending)+1)
	size := int64(0)
	if o.marked > 0 { // keeps the count of seqs going
		first := o.opts.Mark(o.marked)
		recs = append(recs, first)
		size += int64(len(first)) + 1
	}
	for _, e := range o.pending {
		recs = append(recs, e.line)
		size += e.size()
	}
	if err := o.log.Replace(recs, o.opts.Perm); err != nil {
		return fmt.Errorf("compact %s %s: %w", o.opts.Name, o.log.Path(), err)
	}
	// Reuse pending's array from its start, so that a long outage's
	// finished prefix is not kept alive.
	o.pending = append(make([]OutboxEntry[T], 0, len(o.pending)), o.pending...)
	o.fileBytes = size
	o.floor = size - o.pendBytes
	o.show()
	return nil
}

// Counts returns how many entries wait and what the file takes; it never
// waits for a write in progress.
func (o *Outbox[T]) Counts() (waiting int, fileBytes int64) {
	return int(o.shownWaiting.Load()), o.shownBytes.Load()
}

// Path returns the file's path.
func (o *Outbox[T]) Path() string { return o.log.Path() }

// Close closes the file.
func (o *Outbox[T]) Close() error { return o.log.Close() }
