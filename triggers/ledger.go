package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
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
// message and call the model), then answered or failed. A restart requeues
// queued and running triggers; it marks a sent one interrupted, because its
// model call may have acted. Dropped triggers were refused after they were
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
	// QueuedAt, StartedAt and SentAt appear only in compacted ledgers, where
	// one record stands for a trigger's whole history.
	QueuedAt  time.Time `json:"queued_at,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	SentAt    time.Time `json:"sent_at,omitzero"`
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
	seq        int64
}

// Ledger is a desk's durable record of its triggers: an append-only file
// of JSON lines, each fsynced before Append returns, and an index of the
// latest state of every trigger, rebuilt from the file when it is opened.
// A write that fails (a full disk) leaves no trace in the file: it is cut
// back to its last good record, so the next record is whole (see
// durable.Log). It is safe for concurrent use.
type Ledger struct {
	path string
	fsys durable.FS
	log  *durable.Log
	scan durable.Scan // what OpenLedger found: the damage to report

	mu       sync.Mutex
	closed   bool
	entries  map[string]*Item
	lastSlot map[string]time.Time
	seq      int64
	records  int
	changed  chan struct{}
}

// OpenLedger opens (creating it if needed) the ledger at path and reads it.
// See OpenLedgerOn.
func OpenLedger(path string) (*Ledger, error) { return OpenLedgerOn(nil, path) }

// OpenLedgerOn opens (creating it if needed) the ledger at path, writing
// through fsys (nil: the operating system), and reads it. A torn tail, left
// by a crash in the middle of a write, is set aside in
// <path>.torn-<offset> and cut off; bad lines before the last good record
// are skipped (a record glued onto half of an earlier one is recovered).
// Damage reports what was found, for the caller to announce.
func OpenLedgerOn(fsys durable.FS, path string) (*Ledger, error) {
	l := &Ledger{path: path, fsys: durable.Or(fsys), entries: map[string]*Item{}, lastSlot: map[string]time.Time{}, changed: make(chan struct{})}
	log, sc, err := durable.OpenLog(fsys, path, 0o640, func(line []byte) bool {
		var r Record
		if json.Unmarshal(line, &r) != nil || r.ID == "" {
			return false
		}
		l.apply(r)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	sc.Records, sc.Offsets = nil, nil // applied; not kept
	l.log, l.scan = log, sc
	return l, nil
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
	// Cut first: a record whose write was refused must never be made
	// durable by the fsync below.
	if err := l.log.Mend(); err != nil {
		return fmt.Errorf("probe the disk of %s: %w", l.path, err)
	}
	probe := filepath.Join(filepath.Dir(l.path), ".disk-probe")
	err := durable.WriteFile(l.fsys, probe, make([]byte, probeSize), 0o640)
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
// returns an error neither the file nor the index holds r.
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
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("trigger ledger %s: encode %s: %w", l.path, r.ID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("trigger ledger %s: closed", l.path)
	}
	if err := l.log.Append(line, durable); err != nil {
		return fmt.Errorf("trigger ledger: record %s %s: %w", r.ID, r.State, err)
	}
	l.apply(r)
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// apply folds r into the index. l.mu must be held (or l not yet shared).
func (l *Ledger) apply(r Record) {
	l.records++
	e := l.entries[r.ID]
	if e == nil {
		l.seq++
		e = &Item{Trigger: Trigger{ID: r.ID}, seq: l.seq}
		l.entries[r.ID] = e
	}
	if r.Trigger != nil {
		e.Trigger = *r.Trigger
	}
	e.State, e.Updated = r.State, r.At
	switch r.State {
	case StateQueued:
		if e.QueuedAt.IsZero() {
			e.QueuedAt = r.At
		}
	case StateRunning:
		e.StartedAt = r.At
	case StateSent:
		e.SentAt = r.At
	}
	for _, at := range []struct {
		dst *time.Time
		v   time.Time
	}{{&e.QueuedAt, r.QueuedAt}, {&e.StartedAt, r.StartedAt}, {&e.SentAt, r.SentAt}} {
		if !at.v.IsZero() {
			*at.dst = at.v
		}
	}
	if r.Schedule != "" {
		e.Schedule, e.Slot = r.Schedule, r.Slot
		if last, ok := l.lastSlot[r.Schedule]; !ok || r.Slot.After(last) {
			l.lastSlot[r.Schedule] = r.Slot
		}
	}
	if r.Session != "" {
		e.Session, e.Turn = r.Session, r.Turn
	}
	if r.Reply != "" {
		e.Reply = r.Reply
	}
	if r.Reason != "" || r.State.Terminal() {
		e.Reason = r.Reason
	}
	if r.MergedInto != "" {
		e.MergedInto = r.MergedInto
	}
	for _, id := range r.Merges {
		l.apply(Record{At: r.At, ID: id, State: StateMerged, MergedInto: r.ID})
		l.records--
	}
}

// Get returns what the ledger knows of trigger id.
func (l *Ledger) Get(id string) (Item, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	if !ok {
		return Item{}, false
	}
	return *e, true
}

// Resolve returns the entry of trigger id and, when it was merged into
// another, the entry of the trigger whose turn answers it (following the
// chain of merges).
func (l *Ledger) Resolve(id string) (own, answer Item, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	if !ok {
		return Item{}, Item{}, false
	}
	own, answer = *e, *e
	for i := 0; answer.State == StateMerged && answer.MergedInto != "" && i < 1000; i++ {
		next, ok := l.entries[answer.MergedInto]
		if !ok {
			break
		}
		answer = *next
	}
	return own, answer, true
}

// Unfinished returns the triggers that are queued, running or sent, in the
// order they were first recorded.
func (l *Ledger) Unfinished() []Item {
	return l.filter(func(e *Item) bool { return !e.State.Terminal() })
}

// Interrupted returns the interrupted triggers, oldest first.
func (l *Ledger) Interrupted() []Item {
	return l.filter(func(e *Item) bool { return e.State == StateInterrupted })
}

func (l *Ledger) filter(keep func(*Item) bool) []Item {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Item
	for _, e := range l.entries {
		if keep(e) {
			out = append(out, *e)
		}
	}
	slices.SortFunc(out, func(a, b Item) int { return int(a.seq - b.seq) })
	return out
}

// LastSlot returns the latest slot of schedule the ledger has a record of
// (claimed, dropped or missed), or the time it was armed.
func (l *Ledger) LastSlot(schedule string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.lastSlot[schedule]
	return t, ok
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
	return len(l.entries)
}

// Records returns how many records the file holds.
func (l *Ledger) Records() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records
}

// Compact rewrites the file with one record per trigger, leaving out the
// finished triggers last updated before cutoff, but always keeping each
// schedule's latest slot (so that no slot fires twice) and every trigger
// a kept one was merged into. The rewrite is atomic: a crash leaves the old
// file or the new one.
func (l *Ledger) Compact(cutoff time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("trigger ledger %s: closed", l.path)
	}
	all := make([]*Item, 0, len(l.entries))
	for _, e := range l.entries {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *Item) int { return int(a.seq - b.seq) })
	keep := map[string]bool{}
	for _, e := range all {
		old := e.State.Terminal() && e.Updated.Before(cutoff)
		latestSlot := e.Schedule != "" && e.Slot.Equal(l.lastSlot[e.Schedule])
		if !old || latestSlot {
			keep[e.Trigger.ID] = true
		}
	}
	for _, e := range all { // a kept merged trigger keeps what answers it
		for id := e.Trigger.ID; keep[id] && l.entries[id] != nil && l.entries[id].MergedInto != ""; id = l.entries[id].MergedInto {
			keep[l.entries[id].MergedInto] = true
		}
	}
	var lines [][]byte
	for _, e := range all {
		if !keep[e.Trigger.ID] {
			continue
		}
		t := e.Trigger
		b, err := json.Marshal(Record{
			At: e.Updated, ID: t.ID, State: e.State, Trigger: &t, Schedule: e.Schedule, Slot: e.Slot,
			MergedInto: e.MergedInto, Session: e.Session, Turn: e.Turn, Reply: e.Reply, Reason: e.Reason,
			QueuedAt: e.QueuedAt, StartedAt: e.StartedAt, SentAt: e.SentAt,
		})
		if err != nil {
			return fmt.Errorf("compact trigger ledger %s: %w", l.path, err)
		}
		lines = append(lines, b)
	}
	if err := l.log.Replace(lines, 0o640); err != nil {
		return fmt.Errorf("compact trigger ledger: %w", err)
	}
	n := len(lines)
	for id := range l.entries {
		if !keep[id] {
			delete(l.entries, id)
		}
	}
	l.records = n
	return nil
}

// Close closes the file; later Appends fail.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.log.Close()
}
