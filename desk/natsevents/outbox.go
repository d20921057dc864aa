package natsevents

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/deskd/deskd/memory/durable"
)

// OutboxFile is the outbox's file in Options.Dir.
const OutboxFile = "outbox.jsonl"

// An entry is written (one write) when it is added, and fsynced by flush,
// which the sender calls before it sends: a process killed after add
// returned leaves the entry in the file (the kernel has it); a host that
// loses power may lose what was not flushed yet.
//
// The outbox's file holds two kinds of line, in the order they happened:
//
//	{"seq":N,"id":"...","subject":"...","data":{...}}   an event to send
//	{"acked":N}                                         everything up to N was acknowledged
//
// so that a restart sends again exactly the entries after the last acked
// line. A compaction rewrites the file as one acked line and the entries
// still waiting.

// record is one line of the outbox's file.
type record struct {
	Seq     uint64          `json:"seq,omitempty"`
	ID      string          `json:"id,omitempty"`
	Subject string          `json:"subject,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	Acked   uint64          `json:"acked,omitempty"`
}

// entry is an event waiting in the outbox.
type entry struct {
	seq     uint64
	id      string
	subject string
	data    []byte
	line    []byte // its line in the file, without '\n'
}

// size is what the entry takes in the file.
func (e entry) size() int64 { return int64(len(e.line)) + 1 }

// outbox is the durable, bounded queue of events waiting for their PubAck.
// Its entries are also held in memory (the file is read once, at open), so
// its memory is bounded by maxBytes as its file is.
type outbox struct {
	log      *durable.Log
	maxBytes int64

	mu        sync.Mutex
	pending   []entry // waiting, in seq order
	pendBytes int64   // what pending takes in the file
	fileBytes int64   // the file's length
	next      uint64  // the seq of the next entry
	acked     uint64  // the last seq acknowledged
	// resumed is the last seq the file held at open: an entry up to it
	// may have been sent before the restart.
	resumed uint64
	// floor is what the file holds besides pending just after a
	// compaction (its acked line): a compaction frees nothing below it.
	floor int64
	wake  chan struct{}
	// dirty says entries were written since the last fsync.
	dirty bool
}

// openOutbox opens (creating it) the outbox in dir and reads what waits in
// it. The Scan says what damage was found and set aside.
func openOutbox(dir string, maxBytes int64) (*outbox, durable.Scan, error) {
	var recs []record
	valid := func(line []byte) bool {
		var r record
		if json.Unmarshal(line, &r) != nil || !r.ok() {
			return false
		}
		recs = append(recs, r)
		return true
	}
	path := filepath.Join(dir, OutboxFile)
	log, sc, err := durable.OpenLog(nil, path, 0o640, valid)
	if err != nil {
		return nil, durable.Scan{}, fmt.Errorf("open the NATS event outbox %s: %w", path, err)
	}
	o := &outbox{log: log, maxBytes: maxBytes, next: 1, wake: make(chan struct{}, 1)}
	for i, r := range recs {
		o.fileBytes = sc.Offsets[i] + int64(len(sc.Records[i])) + 1
		o.load(r, sc.Records[i])
	}
	o.resumed = o.next - 1
	return o, sc, nil
}

// ok says whether a decoded line is an entry or an acked line.
func (r record) ok() bool {
	if r.Acked > 0 {
		return r.Seq == 0 && r.ID == "" && r.Subject == "" && len(r.Data) == 0
	}
	return r.Seq > 0 && r.ID != "" && r.Subject != "" && json.Valid(r.Data)
}

// load takes one record of the file, read in order, into o.
func (o *outbox) load(r record, line []byte) {
	if r.Acked > 0 {
		o.acked = max(o.acked, r.Acked)
		o.next = max(o.next, r.Acked+1)
		for len(o.pending) > 0 && o.pending[0].seq <= o.acked {
			o.pendBytes -= o.pending[0].size()
			o.pending = o.pending[1:]
		}
		return
	}
	o.next = max(o.next, r.Seq+1)
	if r.Seq <= o.acked {
		return
	}
	e := entry{seq: r.Seq, id: r.ID, subject: r.Subject, data: r.Data, line: append([]byte(nil), line...)}
	o.pending = append(o.pending, e)
	o.pendBytes += e.size()
}

// add keeps an event for subject with body data and Nats-Msg-Id id. It
// returns false, keeping nothing,
// when the entry would take the file past maxBytes (after a compaction of
// what was acknowledged), or with the error when the file refused it.
func (o *outbox) add(subject, id string, data []byte) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := record{Seq: o.next, ID: id, Subject: subject, Data: data}
	line, err := json.Marshal(r)
	if err != nil {
		return false, fmt.Errorf("encode event %s for the NATS outbox: %w", subject, err)
	}
	e := entry{seq: r.Seq, id: id, subject: subject, data: data, line: line}
	if o.fileBytes+e.size() > o.maxBytes && o.fileBytes-o.pendBytes > o.floor {
		if err := o.compact(); err != nil {
			return false, err
		}
	}
	if o.fileBytes+e.size() > o.maxBytes {
		return false, nil
	}
	if err := o.log.Append(line, false); err != nil {
		return false, fmt.Errorf("keep event %s in the NATS outbox: %w", subject, err)
	}
	o.dirty = true
	o.next++
	o.pending = append(o.pending, e)
	o.pendBytes += e.size()
	o.fileBytes += e.size()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// wasResumed says whether entry seq was in the file at open: sent before
// the restart, perhaps.
func (o *outbox) wasResumed(seq uint64) bool { return seq <= o.resumed }

// flush fsyncs the entries written since the last flush, if any: one
// fsync for all of them. It does not hold o.mu meanwhile, so adds go on.
func (o *outbox) flush() error {
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
		return fmt.Errorf("fsync the NATS event outbox: %w", err)
	}
	return nil
}

// head returns the oldest waiting entry.
func (o *outbox) head() (entry, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 {
		return entry{}, false
	}
	return o.pending[0], true
}

// ack removes the oldest entry, seq, which NATS acknowledged, and records
// that in the file (without an fsync: an acked line lost to a crash only
// sends the entry again, which the stream's dedupe drops). It compacts
// the file when what was acknowledged takes more than a quarter of
// maxBytes. It returns how many entries still wait.
func (o *outbox) ack(seq uint64) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 || o.pending[0].seq != seq {
		return len(o.pending), nil
	}
	o.pendBytes -= o.pending[0].size()
	o.pending[0] = entry{}
	o.pending = o.pending[1:]
	o.acked = seq
	line, _ := json.Marshal(record{Acked: seq}) // cannot fail
	if err := o.log.Append(line, false); err != nil {
		return len(o.pending), fmt.Errorf("record the PubAck of outbox entry %d: %w", seq, err)
	}
	o.fileBytes += int64(len(line)) + 1
	if o.fileBytes-o.pendBytes-o.floor > o.maxBytes/4 {
		if err := o.compact(); err != nil {
			return len(o.pending), err
		}
	}
	return len(o.pending), nil
}

// compact rewrites the file as the acked line and the waiting entries.
// o.mu must be held.
func (o *outbox) compact() error {
	recs := make([][]byte, 0, len(o.pending)+1)
	size := int64(0)
	if o.acked > 0 { // keeps the count of seqs going
		first, _ := json.Marshal(record{Acked: o.acked}) // cannot fail
		recs = append(recs, first)
		size += int64(len(first)) + 1
	}
	for _, e := range o.pending {
		recs = append(recs, e.line)
		size += e.size()
	}
	if err := o.log.Replace(recs, 0o640); err != nil {
		return fmt.Errorf("compact the NATS event outbox: %w", err)
	}
	// Reuse pending's array from its start, so that a long outage's
	// acknowledged prefix is not kept alive.
	o.pending = append(make([]entry, 0, len(o.pending)), o.pending...)
	o.fileBytes = size
	o.floor = size - o.pendBytes
	return nil
}

// counts returns how many entries wait and what the file takes.
func (o *outbox) counts() (waiting int, fileBytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending), o.fileBytes
}

// close closes the file.
func (o *outbox) close() error { return o.log.Close() }
