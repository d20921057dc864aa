package notify

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// OutboxFile is a target's outbox file, in Options.Dir/<target>/.
const OutboxFile = "outbox.jsonl"

// A target's outbox file holds two kinds of line, in the order they
// happened:
//
//	{"seq":N,"id":"msg_...","type":"turn.failed","at":"...","body":{...}}   a notification to post
//	{"done":N}                                                            everything up to N was posted or given up
//
// The body is the exact request body, so that every copy of a
// notification, after a retry or a restart, is the same bytes with the
// same webhook-id. It never holds a secret: the signature is made at each
// attempt. A compaction rewrites the file as one done line and the
// entries still waiting.

// record is one line of an outbox file.
type record struct {
	Seq  uint64          `json:"seq,omitempty"`
	ID   string          `json:"id,omitempty"`
	Type string          `json:"type,omitempty"`
	At   time.Time       `json:"at,omitzero"`
	Body json.RawMessage `json:"body,omitempty"`
	Done uint64          `json:"done,omitempty"`
}

// ok says whether a decoded line is an entry or a done line.
func (r record) ok() bool {
	if r.Done > 0 {
		return r.Seq == 0 && r.ID == "" && len(r.Body) == 0
	}
	return r.Seq > 0 && r.ID != "" && r.Type != "" && !r.At.IsZero() && json.Valid(r.Body)
}

// entry is a notification waiting in an outbox.
type entry struct {
	seq  uint64
	id   string
	typ  string
	at   time.Time // when it was kept: give_up_after counts from it
	body []byte
	line []byte // its line in the file, without '\n'
}

// size is what the entry takes in the file.
func (e entry) size() int64 { return int64(len(e.line)) + 1 }

// outbox is one target's durable, bounded queue of notifications. Its
// entries are also held in memory (the file is read once, at open), so its
// memory is bounded by maxBytes as its file is.
type outbox struct {
	log      *durable.Log
	maxBytes int64

	mu        sync.Mutex
	pending   []entry // waiting, in seq order
	pendBytes int64   // what pending takes in the file
	fileBytes int64   // the file's length
	next      uint64  // the seq of the next entry
	done      uint64  // the last seq posted or given up
	// floor is what the file holds besides pending just after a
	// compaction (its done line): a compaction frees nothing below it.
	floor int64
	wake  chan struct{}

	// shown are len(pending) and fileBytes as of the last change, read
	// without mu: Stats (/healthz, the metrics) must not wait for a
	// stalled fsync that holds mu.
	shownWaiting, shownBytes atomic.Int64
}

// show publishes the counts for counts. o.mu must be held.
func (o *outbox) show() {
	o.shownWaiting.Store(int64(len(o.pending)))
	o.shownBytes.Store(o.fileBytes)
}

// openOutbox opens (creating it) the outbox file in dir and reads what
// waits in it. The Scan says what damage was found and set aside.
func openOutbox(fsys durable.FS, dir string, maxBytes int64) (*outbox, durable.Scan, error) {
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
	log, sc, err := durable.OpenLog(fsys, path, 0o600, valid)
	if err != nil {
		return nil, durable.Scan{}, fmt.Errorf("open the notification outbox %s: %w", path, err)
	}
	o := &outbox{log: log, maxBytes: maxBytes, next: 1, wake: make(chan struct{}, 1)}
	for i, r := range recs {
		o.fileBytes = sc.Offsets[i] + int64(len(sc.Records[i])) + 1
		o.load(r, sc.Records[i])
	}
	o.show()
	return o, sc, nil
}

// load takes one record of the file, read in order, into o.
func (o *outbox) load(r record, line []byte) {
	if r.Done > 0 {
		o.done = max(o.done, r.Done)
		o.next = max(o.next, r.Done+1)
		for len(o.pending) > 0 && o.pending[0].seq <= o.done {
			o.pendBytes -= o.pending[0].size()
			o.pending = o.pending[1:]
		}
		return
	}
	o.next = max(o.next, r.Seq+1)
	if r.Seq <= o.done {
		return
	}
	e := entry{seq: r.Seq, id: r.ID, typ: r.Type, at: r.At, body: r.Body, line: append([]byte(nil), line...)}
	o.pending = append(o.pending, e)
	o.pendBytes += e.size()
}

// add keeps a notification, fsynced. It returns false, keeping nothing,
// when the entry would take the file past maxBytes (after a compaction of
// what is done), or with the error when the file refused it.
func (o *outbox) add(id, typ string, at time.Time, body []byte) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := record{Seq: o.next, ID: id, Type: typ, At: at, Body: body}
	line, err := json.Marshal(r)
	if err != nil {
		return false, fmt.Errorf("encode notification %s for the outbox: %w", typ, err)
	}
	e := entry{seq: r.Seq, id: id, typ: typ, at: at, body: body, line: line}
	if o.fileBytes+e.size() > o.maxBytes && o.fileBytes-o.pendBytes > o.floor {
		if err := o.compact(); err != nil {
			return false, err
		}
	}
	if o.fileBytes+e.size() > o.maxBytes {
		return false, nil
	}
	if err := o.log.Append(line, true); err != nil {
		return false, fmt.Errorf("keep notification %s in the outbox %s: %w", typ, o.log.Path(), err)
	}
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

// head returns the oldest waiting entry.
func (o *outbox) head() (entry, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 {
		return entry{}, false
	}
	return o.pending[0], true
}

// finish removes the oldest entry, seq, posted or given up, and records
// that in the file (without an fsync: a done line lost to a crash only
// posts the entry again, with the same webhook-id). It compacts the file
// when what is done takes more than a quarter of maxBytes.
func (o *outbox) finish(seq uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 || o.pending[0].seq != seq {
		return nil
	}
	o.pendBytes -= o.pending[0].size()
	o.pending[0] = entry{}
	o.pending = o.pending[1:]
	o.done = seq
	defer o.show()
	line, _ := json.Marshal(record{Done: seq}) // cannot fail
	if err := o.log.Append(line, false); err != nil {
		return fmt.Errorf("record notification %d as done in %s: %w", seq, o.log.Path(), err)
	}
	o.fileBytes += int64(len(line)) + 1
	if o.fileBytes-o.pendBytes-o.floor > o.maxBytes/4 {
		return o.compact()
	}
	return nil
}

// compact rewrites the file as the done line and the waiting entries.
// o.mu must be held.
func (o *outbox) compact() error {
	recs := make([][]byte, 0, len(o.pending)+1)
	size := int64(0)
	if o.done > 0 { // keeps the count of seqs going
		first, _ := json.Marshal(record{Done: o.done}) // cannot fail
		recs = append(recs, first)
		size += int64(len(first)) + 1
	}
	for _, e := range o.pending {
		recs = append(recs, e.line)
		size += e.size()
	}
	if err := o.log.Replace(recs, 0o600); err != nil {
		return fmt.Errorf("compact the notification outbox %s: %w", o.log.Path(), err)
	}
	o.pending = append(make([]entry, 0, len(o.pending)), o.pending...)
	o.fileBytes = size
	o.floor = size - o.pendBytes
	o.show()
	return nil
}

// counts returns how many entries wait and what the file takes; it never
// waits for a write in progress.
func (o *outbox) counts() (waiting int, fileBytes int64) {
	return int(o.shownWaiting.Load()), o.shownBytes.Load()
}

// close closes the file.
func (o *outbox) close() error { return o.log.Close() }
