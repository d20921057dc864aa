package triggers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// LedgerFile is the name of a desk's trigger ledger in the desk's folder.
const LedgerFile = "triggers.jsonl"

// State is where a trigger stands in the ledger.
//
// A trigger is queued, then running (its turn began), then sent (the desk
// is about to hand it to the model router, whose first act is to record the
// message and call the model), then answered or failed. Only queued (the
// API's 202) is fsynced before the model call: running, sent and answered
// ride unsynced on the session file's records. A restart goes by the
// session file: a trigger whose message it holds is interrupted (its model
// call may have acted) or answered (its reply is there too); any other
// unfinished trigger is queued again. Dropped triggers were refused after they were
// recorded (a scheduled slot that found the queue full); merged ones were
// replaced in the queue by a newer trigger of the same key and are answered
// by that trigger's turn; missed ones are scheduled slots that did not run.
type State string

// The states of a trigger.
const (
	StateQueued      State = "queued"
	StateRunning     State = "running"
	StateSent        State = "sent"
	StateAnswered    State = "answered"
	StateFailed      State = "failed"
	StateInterrupted State = "interrupted"
	StateDropped     State = "dropped"
	StateMerged      State = "merged"
	StateMissed      State = "missed"
	// StateArmed marks when a schedule was first seen: its slots are
	// counted from there, so that slots missed before its first claim are
	// not skipped silently. The record's id is ArmID(schedule).
	StateArmed State = "armed"
	// StateAcknowledged is a record's, never a trigger's: the operator
	// acknowledged an interrupted trigger (Record.Ack). The trigger stays
	// interrupted, but leaves Interrupted (ledger_ack.go).
	StateAcknowledged State = "acknowledged"
)

// Terminal reports whether s is a final state.
func (s State) Terminal() bool {
	switch s {
	case StateQueued, StateRunning, StateSent:
		return false
	}
	return true
}

// Record is one line of the ledger: a trigger's new state and what came
// with it.
type Record struct {
	At    time.Time `json:"at"`
	ID    string    `json:"id"`
	State State     `json:"state"`
	// Trigger is the whole trigger; set when it is first recorded.
	Trigger *Trigger `json:"trigger,omitempty"`
	// Schedule and Slot identify a scheduled slot's claim.
	Schedule string    `json:"schedule,omitempty"`
	Slot     time.Time `json:"slot,omitzero"`
	// Merges lists the queued triggers this one replaced (coalescing);
	// they become merged into it.
	Merges []string `json:"merges,omitempty"`
	// MergedInto is the trigger that replaced this one.
	MergedInto string `json:"merged_into,omitempty"`
	// Session, Turn and Reply are the answer.
	Session string `json:"session,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	Reply   string `json:"reply,omitempty"`
	// Reason explains a failure, a drop, an interruption, a miss or a requeue.
	Reason string `json:"reason,omitempty"`
	// QueuedAt, StartedAt and SentAt appear in compacted ledgers, where
	// one record stands for a trigger's whole history; StartedAt also on a
	// sent record whose turn wrote no running record.
	QueuedAt  time.Time `json:"queued_at,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	SentAt    time.Time `json:"sent_at,omitzero"`
	// AtOnce, on a queued record, says the desk took the trigger at once,
	// its loop waiting for work: the record, fsynced before the acceptance
	// is answered, is the turn's one durability point, and the turn's
	// message in the session file is written without an fsync of its
	// own. A restart that finds no message of such a trigger cannot tell
	// whether the model was asked (a crash of the host, or a file system
	// that dropped unsynced pages, may have lost the message of a request
	// that went out): it is interrupted, never run again. A queued record
	// without AtOnce (the trigger queued again) clears it.
	AtOnce bool `json:"at_once,omitempty"`
	// Ack is the acknowledgement of an interrupted trigger, in a record of
	// state acknowledged.
	Ack *Ack `json:"ack,omitempty"`
}

// Item is what the ledger knows of one trigger.
type Item struct {
	Trigger    Trigger
	State      State
	Schedule   string
	Slot       time.Time
	QueuedAt   time.Time
	StartedAt  time.Time
	SentAt     time.Time
	Updated    time.Time
	Session    string
	Turn       int
	Reply      string
	Reason     string
	MergedInto string
	// AtOnce is its latest queued record's (Record.AtOnce).
	AtOnce bool
	// Ack is the operator's acknowledgement of an interrupted trigger (the
	// first one; nil: none).
	Ack *Ack
	seq int64
}

// Ledger is a desk's durable record of its triggers: an append-only file
// of JSON lines, each fsynced before Append returns, and an index rebuilt
// from the file when it is opened (from the persisted copy of it that
// Close leaves, when that is of the file, and the records after it). The
// index keeps the whole Item of the open triggers (queued, running, sent)
// and of the interrupted ones; of a finished trigger it keeps its state
// and where its records are, and Get reads them back (but for the last
// 256 finished, whose Items it keeps). A write that fails (a full disk)
// leaves no trace in the file: it is cut back to its last good record, so
// the next record is whole (see durable.Log). It is safe for concurrent use; a reader of the
// index (Get, Unfinished, Interrupted, Len) never waits for a write's
// fsync.
type Ledger struct {
	path string
	fsys durable.FS
	log  *durable.Log
	scan durable.Scan // what OpenLedger found: the damage to report

	// wmu serializes the writes (Append, Note, Compact, Close) and is
	// held through their fsyncs. The index changes only with both wmu and
	// mu held, so a holder of wmu may read it without mu.
	wmu sync.Mutex
	// enc writes a record into line, both kept from one write to the
	// next; wmu guards them.
	enc  *json.Encoder
	line bytes.Buffer
	// ackMu serializes Acknowledge's look and record, so that the first
	// acknowledgement stands.
	ackMu sync.Mutex
	size  int64 // the end of the last good record: where the next one goes
	// indexed: the persisted index beside the file is of the file as it
	// is (loaded at open, nothing appended since, or just written).
	indexed bool
	// unsynced: a record was written without its fsync (Note) since the
	// last fsync of the file.
	unsynced  bool
	nextCheck int // CompactIfGrown looks again once records reach it
	// detached is set when a compaction's new file is in place but the
	// log could not be moved onto it: appends refuse until Probe (or the
	// next append) succeeds in moving it.
	detached error

	// mu guards the index and is held only to read or change it, never
	// through a write, an fsync or a read of the file.
	mu         sync.Mutex
	closed     bool
	x          *index               // every trigger's entry, by id
	items      map[string]*Item     // the whole Item of each open or interrupted trigger
	mergedInto map[uint32]string    // by entry: the trigger a merged one was merged into
	slots      map[uint32]slotRef   // by entry: the slot of a scheduled one
	scheds     map[string]*schedule // each schedule's latest slot
	records    int
	skipped    []durable.Skipped // the bad lines the file holds (a compaction drops them)
	changed    chan struct{}
	// recent keeps the Items of the triggers that finished last, so that
	// the Get that follows an answer (the API's long poll) does not read
	// the file; gen counts the changes to the index, so that a reader
	// caches what it read back only if none came meanwhile.
	recent *recent
	gen    uint64
	// epoch counts the compactions begun and ended: a reader that opened
	// the file by its path checks that none began meanwhile (its rename
	// would have given it the new file). replaced is a compaction's handle
	// on the file it replaces, which the index describes until the
	// compaction ends; readers share it meanwhile.
	epoch    uint64
	replaced *sharedFile
}

// sharedFile is a read handle on the ledger's file that a compaction and
// the readers it overlaps share; the last one done closes it.
type sharedFile struct {
	f     *os.File
	users int
	done  bool // the compaction ended: no new users
}

// errReplaced: a compaction replaced the file while a reader was opening it.
var errReplaced = errors.New("trigger ledger: replaced meanwhile")

// OpenLedger opens (creating it if needed) the ledger at path and reads it.
// See OpenLedgerOn.
func OpenLedger(path string) (*Ledger, error) { return OpenLedgerOn(nil, path) }

// OpenLedgerOn opens (creating it if needed) the ledger at path, writing
// through fsys (nil: the operating system), and reads it. A torn tail, left
// by a crash in the middle of a write, is set aside in
// <path>.torn-<offset> and cut off; bad lines before the last good record
// are skipped (a record glued onto half of an earlier one is recovered).
// Damage reports what was found, for the caller to announce.
//
// When the persisted index that Close and Compact leave beside the file
// (<path>.idx) describes the file, it is loaded and only the records
// appended after it are read; otherwise (none, damaged, or of another or
// changed file) the whole file is, in chunks. Each record read is decoded
// for the index only (its id, state, time, slot and merges); the whole
// records are decoded again only for the triggers left open or
// interrupted, read back by their place in the file.
func OpenLedgerOn(fsys durable.FS, path string) (*Ledger, error) {
	if p := loadIndex(path); p != nil {
		l, torn, err := openLedger(fsys, path, p)
		if !errors.Is(err, errBadIndex) {
			return l, err
		}
		// The index proved wrong (an open trigger it does not fold to,
		// or a file shorter than it): read the whole file, and still
		// report the torn tail the first try cut off.
		l, _, err = openLedger(fsys, path, nil)
		if err == nil && l.scan.Torn == nil {
			l.scan.Torn = torn
		}
		return l, err
	}
	l, _, err := openLedger(fsys, path, nil)
	return l, err
}

// openLedger opens the ledger at path: from p, a persisted index of it,
// and the records after what p covers; or, p nil, from the whole file.
// When p proves wrong (errBadIndex) it returns the torn tail it cut.
func openLedger(fsys durable.FS, path string, p *persisted) (*Ledger, *durable.Torn, error) {
	l := &Ledger{
		path: path, fsys: durable.Or(fsys), x: newIndex(), items: map[string]*Item{}, mergedInto: map[uint32]string{},
		slots: map[uint32]slotRef{}, scheds: map[string]*schedule{}, changed: make(chan struct{}), recent: newRecent(recentItems),
	}
	from := int64(0)
	if p != nil {
		l.x, l.mergedInto, l.slots, l.scheds, l.records, l.skipped = p.x, p.mergedInto, p.slots, p.scheds, p.records, p.skipped
		from = p.check.covered
	}
	loaded := len(l.x.ents)
	log, sc, err := durable.OpenLogAt(fsys, path, 0o640, from, func(line []byte, off int64) bool {
		r, ok := decodeIndex(line)
		if !ok {
			return false
		}
		l.note(&r, off, off+int64(len(line)))
		return true
	})
	if err != nil {
		if p != nil && errors.Is(err, durable.ErrShort) {
			return nil, nil, errBadIndex
		}
		return nil, nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	// A missing file is an empty ledger, created by its first record:
	// an idle desk's ledger is no file and holds no descriptor.
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		l.size = fi.Size()
	case !errors.Is(err, fs.ErrNotExist) || from > 0:
		_ = log.Close()
		return nil, nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	l.skipped = append(l.skipped, sc.Skipped...)
	sc.Skipped = slices.Clone(l.skipped)
	var spans [][2]int64
	for i := range l.x.ents {
		e := &l.x.ents[i]
		if e.state.open() {
			id := l.x.id(i)
			l.items[id] = &Item{Trigger: Trigger{ID: id}, seq: int64(i + 1)}
			spans = append(spans, [2]int64{e.first, e.end})
		}
	}
	l.x.clip()
	if err := l.foldOpen(spans); err != nil {
		_ = log.Close()
		return nil, nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	if p != nil {
		// A full read folds each open trigger into the state its entry
		// holds; an index that says otherwise is not of this file.
		for i := range loaded {
			e := &l.x.ents[i]
			if it := l.items[l.x.id(i)]; e.state.open() && (it == nil || it.State != e.state.State()) {
				_ = log.Close()
				return nil, sc.Torn, errBadIndex
			}
		}
	}
	l.indexed = p != nil && l.records == p.records && l.size == p.check.covered && sc.Torn == nil
	l.log, l.scan = log, sc
	return l, nil, nil
}

// forNamed calls f once with each trigger r changes: its own, then those
// it merges.
func forNamed(r *Record, f func(id string)) {
	f(r.ID)
	for i, m := range r.Merges {
		if m != r.ID && !slices.Contains(r.Merges[:i], m) {
			f(m)
		}
	}
}

// Path returns the ledger's file.
func (l *Ledger) Path() string { return l.path }

// Torn reports how many damaged lines OpenLedger set aside or skipped.
func (l *Ledger) Torn() int {
	n := len(l.scan.Skipped)
	if l.scan.Torn != nil {
		n++
	}
	return n
}

// Damage returns what OpenLedger found wrong with the file: the torn tail
// it set aside (nil if none) and the bad lines it skipped.
func (l *Ledger) Damage() (*durable.Torn, []durable.Skipped) { return l.scan.Torn, l.scan.Skipped }

// probeSize is how much Probe writes: enough that a disk with no room
// left refuses it.
const probeSize = 64 << 10

// Probe checks that the ledger's disk takes writes again: it cuts back a
// tail a failed write left (Err), then writes, fsyncs and removes a
// probe file beside the ledger.
func (l *Ledger) Probe() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.reattach(); l.detached != nil {
		return fmt.Errorf("probe the disk of %s: %w", l.path, l.detached)
	}
	// Cut first: a record whose write was refused must never be made
	// durable by the fsync below.
	l.indexed = false
	if err := l.log.Mend(); err != nil {
		return fmt.Errorf("probe the disk of %s: %w", l.path, err)
	}
	probe := filepath.Join(filepath.Dir(l.path), ".disk-probe")
	err := durable.MkdirAll(l.fsys, filepath.Dir(l.path), 0o750) // an idle desk's folder is made by its first write
	if err == nil {
		err = durable.WriteFile(l.fsys, probe, make([]byte, probeSize), 0o640)
	}
	_ = l.fsys.Remove(probe)
	if err != nil {
		return fmt.Errorf("probe the disk of %s: %w", l.path, err)
	}
	if err := l.log.Sync(); err != nil {
		return fmt.Errorf("probe the disk of %s: %w", l.path, err)
	}
	return nil
}

// Append writes r, fsyncs it, and applies it to the index. When it
// returns an error neither the file nor the index holds r. Readers of the
// index do not wait for its fsync; they see r once Append has succeeded.
func (l *Ledger) Append(r Record) error { return l.append(r, true) }

// Note is Append without the fsync, for a record whose loss in a crash
// changes nothing a restart does (a turn's "running": a restart requeues
// a running trigger as it does a queued one). The next Append makes it
// durable with itself, in order.
func (l *Ledger) Note(r Record) error { return l.append(r, false) }

func (l *Ledger) append(r Record, durable bool) error {
	if r.ID == "" {
		return errors.New("trigger ledger: record without id")
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return fmt.Errorf("trigger ledger %s: closed", l.path)
	}
	line, err := l.encode(&r)
	if err != nil {
		return fmt.Errorf("trigger ledger %s: encode %s: %w", l.path, r.ID, err)
	}
	if l.reattach(); l.detached != nil {
		return fmt.Errorf("record %s %s: %w", r.ID, r.State, l.detached)
	}
	back := l.reopened(&r)
	l.indexed = false // even a write that fails and is cut back changes the file's time
	if err := l.log.AppendLines(line, 1, durable); err != nil {
		return fmt.Errorf("trigger ledger: record %s %s: %w", r.ID, r.State, err)
	}
	l.unsynced = !durable // an fsync makes the records before it durable too
	at := l.size
	l.size += int64(len(line))
	f := fieldsOf(&r)
	f.State = intern(f.State)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.note(&f, at, at+int64(len(line))-1)
	forNamed(&r, func(id string) {
		it := l.items[id]
		if it == nil {
			i, _ := l.x.find(id)
			if !l.x.ents[i].state.open() {
				if c, ok := l.recent.get(id); ok {
					fold(c, &r, id) // it stays finished: its cached Item follows
				}
				return
			}
			l.recent.drop(id)
			if it = back; it == nil || id != r.ID {
				it = &Item{Trigger: Trigger{ID: id}, seq: int64(i + 1)}
			}
			l.items[id] = it
		}
		fold(it, &r, id)
		if !it.kept() {
			delete(l.items, id)
			l.recent.put(id, *it)
		}
	})
	l.gen++
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// maxKeptLine is the largest record buffer a Ledger keeps for its next
// write.
const maxKeptLine = 64 << 10

// encode writes r as one JSON line, its newline included, in l's kept
// buffer: the line holds until the next encode. l.wmu must be held.
func (l *Ledger) encode(r *Record) ([]byte, error) {
	if l.enc == nil || l.line.Cap() > maxKeptLine {
		l.line = bytes.Buffer{}
		l.enc = json.NewEncoder(&l.line)
	}
	l.line.Reset()
	// A copy, not r: encoding/json reads the omitzero times of an
	// addressable struct through a copy of each (an allocation a field).
	if err := l.enc.Encode(*r); err != nil {
		return nil, err
	}
	return l.line.Bytes(), nil
}

// reopened returns the Item of r's trigger, read back from the file, when
// r makes a finished trigger open again; nil otherwise. l.wmu must be held.
func (l *Ledger) reopened(r *Record) *Item {
	if !open(r.State) || slices.Contains(r.Merges, r.ID) || l.items[r.ID] != nil {
		return nil
	}
	i, ok := l.x.find(r.ID)
	if !ok {
		return nil
	}
	e := l.x.ents[i]
	it := l.sketch(r.ID, i, e, l.mergedInto[uint32(i)], l.slots[uint32(i)])
	if data, err := readFile(l.path, e.first, e.end); err == nil {
		it = foldRange(r.ID, i, data)
	}
	return &it
}

// note folds r, the record at [at, end) of the file, into the index (its
// entries, merges and schedules), and returns the entry of r's trigger.
// l.mu must be held (or l not yet shared).
func (l *Ledger) note(r *indexFields, at, end int64) uint32 {
	l.records++
	upSec, upNs := r.At.Unix(), int32(r.At.Nanosecond())
	n, known := l.x.find(r.ID)
	if !known {
		n = l.x.add(r.ID, entry{first: at})
	}
	e := &l.x.ents[n]
	e.end, e.state, e.updSec, e.updNs = end, codeOf(r.State), upSec, upNs
	e.single = !known && len(r.Merges) == 0
	if r.Schedule != "" {
		s := l.scheds[r.Schedule]
		switch {
		case s == nil:
			s = &schedule{name: r.Schedule, last: r.Slot}
			l.scheds[r.Schedule] = s
		case r.Slot.After(s.last):
			s.last = r.Slot
		}
		l.slots[uint32(n)] = slotRef{sched: s, sec: r.Slot.Unix(), ns: int32(r.Slot.Nanosecond())}
	}
	if r.MergedInto != "" {
		l.mergedInto[uint32(n)] = r.MergedInto
	}
	for _, id := range r.Merges {
		m, known := l.x.find(id)
		if !known {
			m = l.x.add(id, entry{first: at})
		}
		e := &l.x.ents[m]
		e.end, e.state, e.updSec, e.updNs, e.single = end, codeOf(StateMerged), upSec, upNs, false
		l.mergedInto[uint32(m)] = r.ID
	}
	return uint32(n)
}

// sketch is what the index alone tells of finished trigger id (entry i),
// for when its records cannot be read back.
func (l *Ledger) sketch(id string, i int, e entry, into string, slot slotRef) Item {
	it := Item{Trigger: Trigger{ID: id}, State: e.state.State(), Updated: e.updated(), MergedInto: into, seq: int64(i + 1)}
	if it.State == StateAcknowledged {
		it.State = StateInterrupted // acknowledged by whom, the file would say
	}
	if slot.sched != nil {
		it.Schedule, it.Slot = slot.sched.name, slot.slot()
	}
	return it
}

// foldRange folds the records of trigger id in data, bytes of the file
// that begin with a record, into its Item.
func foldRange(id string, i int, data []byte) Item {
	it := Item{Trigger: Trigger{ID: id}, seq: int64(i + 1)}
	durable.EachRecord(data, func(line []byte) bool {
		r, ok := decodeRecord(line)
		if ok {
			fold(&it, &r, id)
		}
		return ok
	})
	return it
}

// readFile reads the bytes [first, end) of the file at path.
func readFile(path string, first, end int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRange(f, first, end)
}

// readRange reads the bytes [first, end) of f.
func readRange(f *os.File, first, end int64) ([]byte, error) {
	b := make([]byte, end-first)
	n, err := f.ReadAt(b, first)
	if n == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("read %s at %d: %w", f.Name(), first, err)
}

// lookup returns what the ledger knows of trigger id: the Item it keeps of
// an open trigger, or the Item of a finished one, folded from its records
// read back from the file (or sketched from the index if they cannot be
// read).
func (l *Ledger) lookup(id string) (Item, bool) {
	for tries := 0; ; tries++ {
		l.mu.Lock()
		if it, ok := l.items[id]; ok {
			v := *it
			l.mu.Unlock()
			return v, true
		}
		if it, ok := l.recent.get(id); ok {
			v := *it
			l.mu.Unlock()
			return v, true
		}
		i, ok := l.x.find(id)
		if !ok {
			l.mu.Unlock()
			return Item{}, false
		}
		e, into, slot, sh, epoch, gen := l.x.ents[i], l.mergedInto[uint32(i)], l.slots[uint32(i)], l.replaced, l.epoch, l.gen
		if sh != nil {
			sh.users++
		}
		l.mu.Unlock()
		data, err := l.read(sh, epoch, e.first, e.end)
		if errors.Is(err, errReplaced) && tries < 100 {
			continue // the index it read is gone: read the new one
		}
		if err != nil {
			return l.sketch(id, i, e, into, slot), true
		}
		it := foldRange(id, i, data)
		l.mu.Lock()
		if l.gen == gen && l.epoch == epoch && l.items[id] == nil {
			l.recent.put(id, it) // nothing changed it meanwhile
		}
		l.mu.Unlock()
		return it, true
	}
}

// read reads the bytes [first, end) of the file the index described at
// epoch: through sh, a compaction's handle on it, or by its path.
func (l *Ledger) read(sh *sharedFile, epoch uint64, first, end int64) ([]byte, error) {
	if sh != nil {
		defer l.release(sh)
		return readRange(sh.f, first, end)
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l.mu.Lock()
	moved := l.epoch != epoch
	l.mu.Unlock()
	if moved {
		return nil, errReplaced
	}
	return readRange(f, first, end)
}

// release ends a use of sh; the last one after its compaction closes it.
func (l *Ledger) release(sh *sharedFile) {
	l.mu.Lock()
	sh.users--
	last := sh.done && sh.users == 0
	l.mu.Unlock()
	if last {
		_ = sh.f.Close()
	}
}

// Get returns what the ledger knows of trigger id. An open or interrupted
// trigger's Item is in memory, and so are those of the last 256 triggers
// that finished or were read back; another finished one's is read back
// from the file.
func (l *Ledger) Get(id string) (Item, bool) { return l.lookup(id) }

// Resolve returns the entry of trigger id and, when it was merged into
// another, the entry of the trigger whose turn answers it (following the
// chain of merges).
func (l *Ledger) Resolve(id string) (own, answer Item, ok bool) {
	own, ok = l.lookup(id)
	if !ok {
		return Item{}, Item{}, false
	}
	answer = own
	for i := 0; answer.State == StateMerged && answer.MergedInto != "" && i < 1000; i++ {
		next, ok := l.lookup(answer.MergedInto)
		if !ok {
			break
		}
		answer = next
	}
	return own, answer, true
}

// Unfinished returns the triggers that are queued, running or sent, in the
// order they were first recorded.
func (l *Ledger) Unfinished() []Item {
	return l.filter(func(s State) bool { return !s.Terminal() })
}

// Interrupted returns the interrupted triggers, oldest first.
func (l *Ledger) Interrupted() []Item {
	return l.filter(func(s State) bool { return s == StateInterrupted })
}

// filter returns the open or interrupted triggers whose state keep takes,
// in the order they were first recorded.
func (l *Ledger) filter(keep func(State) bool) []Item {
	var out []Item
	l.mu.Lock()
	for _, it := range l.items {
		if keep(it.State) {
			out = append(out, *it)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b Item) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// LastSlot returns the latest slot of schedule the ledger has a record of
// (claimed, dropped or missed), or the time it was armed.
func (l *Ledger) LastSlot(schedule string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.scheds[schedule]
	if !ok {
		return time.Time{}, false
	}
	return s.last, true
}

// Changed returns a channel that is closed at the next Append.
func (l *Ledger) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Len returns how many triggers the ledger knows; Records how many lines
// its file holds.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.x.ents)
}

// Records returns how many records the file holds.
func (l *Ledger) Records() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records
}

// Compaction bounds: CompactIfGrown compacts a file of more than
// compactMin records that holds more than compactGrowth records per
// trigger a compaction would keep.
const (
	compactMin    = 1024
	compactGrowth = 4
)

// CompactIfGrown compacts the ledger as Compact(cutoff) does when its file
// has grown past a bound: more than 1,024 records, and more than four per
// trigger a compaction would keep. It reports whether it compacted. It
// costs little when it does not: it looks at the index only after the
// file has grown by a quarter since it last looked. A desk calls it after
// its turns; a failure leaves the file as it was.
func (l *Ledger) CompactIfGrown(cutoff time.Time) (bool, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return false, fmt.Errorf("trigger ledger %s: closed", l.path)
	}
	if l.records <= compactMin || l.records < l.nextCheck {
		return false, nil
	}
	kept := 0
	for _, e := range l.x.ents { // wmu held: the index does not change
		if !e.state.Terminal() || !e.updated().Before(cutoff) {
			kept++
		}
	}
	l.nextCheck = l.records + max(l.records/4, compactMin/4)
	if l.records <= compactGrowth*kept {
		return false, nil
	}
	if err := l.compact(cutoff); err != nil {
		return false, err
	}
	l.nextCheck = l.records + max(l.records/4, compactMin/4)
	return true, nil
}

// Compact rewrites the file with one record per trigger, leaving out the
// finished triggers last updated before cutoff, but always keeping each
// schedule's latest slot (so that no slot fires twice) and every trigger
// a kept one was merged into. The rewrite is atomic: a crash leaves the old
// file or the new one. A file that is compact already is left as it is.
// When the rewrite fails after the new file took the old one's place (its
// folder's fsync), the ledger answers from the new file and appends refuse
// until they can go to it durably (Probe, or a later Append, retries).
// Readers of the index do not wait for the rewrite or its fsyncs; appends
// do.
func (l *Ledger) Compact(cutoff time.Time) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return fmt.Errorf("trigger ledger %s: closed", l.path)
	}
	return l.compact(cutoff)
}

// compact is Compact; l.wmu must be held. It reads the index without l.mu
// (only a holder of wmu changes it) and takes l.mu only to change it.
func (l *Ledger) compact(cutoff time.Time) error {
	ents := l.x.ents
	keep := make([]bool, len(ents)) // by entry, in the order first seen
	nkeep := 0
	for i := range ents {
		e := &ents[i]
		old := e.state.Terminal() && e.updated().Before(cutoff)
		s := l.slots[uint32(i)]
		latestSlot := s.sched != nil && s.slot().Equal(s.sched.last)
		if e.idLen > 0 && (!old || latestSlot) { // "" (merged, in a damaged file) cannot be a record
			keep[i] = true
		}
	}
	for i := range ents { // a kept merged trigger keeps what answers it
		for n := i; keep[n]; {
			into, ok := l.x.find(l.mergedInto[uint32(n)])
			if !ok || keep[into] || ents[into].idLen == 0 {
				break // none, unknown, or kept and followed on its own
			}
			keep[into] = true
			n = into
		}
	}
	for _, k := range keep {
		if k {
			nkeep++
		}
	}
	if nkeep == len(ents) && l.compactAlready() {
		return nil
	}

	f, err := os.Open(l.path)
	if err != nil {
		return fmt.Errorf("compact trigger ledger %s: %w", l.path, err)
	}
	sh := &sharedFile{f: f, users: 1}
	l.mu.Lock()
	l.epoch++
	l.replaced = sh // until the new index is in, readers read the old file
	l.mu.Unlock()
	lines, err := l.compacted(f, keep, nkeep)
	if err == nil {
		// The persisted index describes the file being replaced: it
		// goes first (a crash before the new one is written leaves
		// none, or one the next open finds is not of the new file).
		_ = l.fsys.Remove(l.path + IndexSuffix)
		l.indexed = false
		err = l.log.Replace(lines, 0o640)
		if err != nil && l.movedFrom(f) {
			// The new file is in place, but Replace failed after its
			// rename (the folder's fsync, or the reopen): the log may
			// still append to the file it replaced, whose records a
			// restart would never see. The index must describe the new
			// file; the log must append to it, once its rename is
			// durable, or refuse to append.
			l.detached = fmt.Errorf("trigger ledger %s: compacted, but not yet appending to the new file: %w", l.path, err)
			err = nil
			l.reattach()
		}
	}
	var x *index
	var mergedInto map[uint32]string
	var slots map[uint32]slotRef
	var scheds map[string]*schedule
	var size int64
	if err == nil { // the index of the new file, built before l.mu is taken
		x = newIndex()
		mergedInto, slots = map[uint32]string{}, map[uint32]slotRef{}
		k := 0
		for i := range ents {
			if !keep[i] {
				continue
			}
			e := ents[i]
			e.first, e.end, e.single = size, size+int64(len(lines[k])), true
			n := x.add(string(l.x.arena[e.idOff:e.idOff+e.idLen]), e)
			if into, ok := l.mergedInto[uint32(i)]; ok {
				mergedInto[uint32(n)] = into
			}
			if s, ok := l.slots[uint32(i)]; ok {
				slots[uint32(n)] = s
			}
			size += int64(len(lines[k])) + 1
			k++
		}
		x.clip()
		scheds = rescheduled(slots)
	}
	l.mu.Lock()
	l.epoch++
	l.replaced = nil
	sh.users--
	sh.done = true
	last := sh.users == 0
	if err == nil {
		items := make(map[string]*Item, len(l.items))
		for id, it := range l.items {
			if n, ok := x.find(id); ok {
				it.seq = int64(n + 1) // the same order, numbered again
				items[id] = it
			}
		}
		for id := range l.recent.items {
			if n, ok := x.find(id); ok {
				l.recent.items[id].seq = int64(n + 1)
			} else {
				l.recent.drop(id) // left out: no longer known
			}
		}
		l.x, l.items, l.mergedInto, l.slots, l.scheds, l.records, l.skipped = x, items, mergedInto, slots, scheds, len(lines), nil
		l.gen++
	}
	l.mu.Unlock()
	if last {
		_ = f.Close()
	}
	if err != nil {
		return fmt.Errorf("compact trigger ledger: %w", err)
	}
	l.size = size
	if l.detached != nil {
		return l.detached
	}
	l.indexed = l.writeIndex() == nil // a cache: without it the next open reads the whole file
	return nil
}

// rescheduled returns the schedules of the slots a compaction kept, each
// with the latest of them, and points the slots at them: what a reopen
// of the compacted file finds. (A schedule's latest slot is always kept,
// unless its trigger's later record named an earlier slot.)
func rescheduled(slots map[uint32]slotRef) map[string]*schedule {
	scheds := map[string]*schedule{}
	for n, ref := range slots {
		s := scheds[ref.sched.name]
		at := ref.slot()
		if at.Equal(ref.sched.last) {
			at = ref.sched.last // the same instant, as it was read
		}
		switch {
		case s == nil:
			s = &schedule{name: ref.sched.name, last: at}
			scheds[s.name] = s
		case at.After(s.last):
			s.last = at
		}
		ref.sched = s
		slots[n] = ref
	}
	return scheds
}

// compactAlready reports whether the file holds exactly one record per
// trigger (in the order first seen) and nothing else.
func (l *Ledger) compactAlready() bool {
	if l.records != len(l.x.ents) {
		return false
	}
	var n int64
	for i := range l.x.ents {
		e := &l.x.ents[i]
		if !e.single {
			return false
		}
		n += e.end - e.first + 1
	}
	return n == l.size
}

// compacted returns the lines of the compacted file: one record per kept
// trigger, in the order first seen. An open trigger's is made from its
// Item; a trigger whose one record is its own is copied as it is; the
// others are folded from their records, read from f (the current file).
func (l *Ledger) compacted(f *os.File, keep []bool, nkeep int) ([][]byte, error) {
	data, err := readRange(f, 0, l.size)
	if err != nil {
		return nil, err
	}
	ents := l.x.ents
	need := map[string]*Item{}
	from := l.size
	for i := range ents {
		if e := &ents[i]; keep[i] && !e.single && !e.state.open() {
			id := l.x.id(i)
			need[id] = &Item{Trigger: Trigger{ID: id}}
			from = min(from, e.first)
		}
	}
	if len(need) > 0 {
		durable.EachRecord(data[from:], func(line []byte) bool {
			ix, ok := decodeIndex(line)
			if !ok {
				return false
			}
			if need[ix.ID] == nil && !slices.ContainsFunc(ix.Merges, func(id string) bool { return need[id] != nil }) {
				return true
			}
			r, _ := decodeRecord(line)
			forNamed(&r, func(id string) {
				if it := need[id]; it != nil {
					fold(it, &r, id)
				}
			})
			return true
		})
	}
	lines := make([][]byte, 0, nkeep)
	for i := range ents {
		if !keep[i] {
			continue
		}
		e := &ents[i]
		id := string(l.x.arena[e.idOff : e.idOff+e.idLen])
		it := l.items[id]
		if it == nil && e.single {
			lines = append(lines, data[e.first:e.end])
			continue
		}
		if it == nil {
			it = need[id]
		}
		b, err := json.Marshal(compactRecord(id, it))
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", id, err)
		}
		lines = append(lines, b)
	}
	return lines, nil
}

// reattach moves the log onto the file a compaction put in place, if
// l.detached says it could not: it fsyncs the folder (making the rename
// durable) and opens the log again. l.wmu must be held.
func (l *Ledger) reattach() {
	if l.detached == nil || l.closed {
		return
	}
	if err := durable.SyncDir(l.fsys, filepath.Dir(l.path)); err != nil {
		return
	}
	log, _, err := durable.OpenLog(l.fsys, l.path, 0o640, func(line []byte) bool {
		_, ok := decodeIndex(line)
		return ok
	})
	if err != nil {
		return
	}
	_ = l.log.Close()
	l.log, l.detached = log, nil
}

// movedFrom reports whether the ledger's path no longer names the file f
// has open: a Replace that failed after its rename.
func (l *Ledger) movedFrom(f *os.File) bool {
	old, err := f.Stat()
	if err != nil {
		return false
	}
	cur, err := os.Stat(l.path)
	return err == nil && !os.SameFile(old, cur)
}

// Close closes the file; later Appends fail. It first makes the records
// written without fsync (Note) durable and leaves the persisted index
// beside the file, so that the next open reads only what is appended
// after it (a failure to write it only makes that open read the whole
// file). A ledger with nothing new since its last fsync and its index (an
// idle desk's), or an empty one, which the next open reads at no cost,
// writes nothing: thousands of idle desks close without an fsync.
func (l *Ledger) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	wasClosed := l.closed
	l.closed = true
	l.mu.Unlock()
	if !wasClosed && l.detached == nil && l.log.Err() == nil && (!l.unsynced || l.log.Sync() == nil) {
		l.unsynced = false
		if !l.indexed && l.size > 0 {
			l.indexed = l.writeIndex() == nil
		}
	}
	return l.log.Close()
}
