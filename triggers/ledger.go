package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
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
// It is safe for concurrent use.
type Ledger struct {
	path string

	mu       sync.Mutex
	f        *os.File
	entries  map[string]*Item
	lastSlot map[string]time.Time
	seq      int64
	records  int
	torn     int
	changed  chan struct{}
}

// OpenLedger opens (creating it if needed) the ledger at path and reads it.
// A torn last line, left by a crash in the middle of a write, is cut off;
// other lines that do not parse are skipped. Both are counted by Torn.
func OpenLedger(path string) (*Ledger, error) {
	l := &Ledger{path: path, entries: map[string]*Item{}, lastSlot: map[string]time.Time{}, changed: make(chan struct{})}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	good := 0
	for off := 0; off < len(data); {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 { // a torn last line: the crash came mid-write
			l.torn++
			break
		}
		line := data[off : off+nl]
		off += nl + 1
		good = off
		var r Record
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &r); err != nil || r.ID == "" {
			l.torn++
			continue
		}
		l.apply(r)
	}
	created := errors.Is(err, fs.ErrNotExist)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("cut the torn tail of trigger ledger %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("cut the torn tail of trigger ledger %s: %w", path, err)
		}
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("open trigger ledger %s: %w", path, err)
		}
	}
	l.f = f
	return l, nil
}

// Path returns the ledger's file.
func (l *Ledger) Path() string { return l.path }

// Torn reports how many lines OpenLedger cut off or skipped.
func (l *Ledger) Torn() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.torn
}

// Append writes r, fsyncs it, and applies it to the index. When it
// returns an error the index is unchanged (the line may or may not be on
// disk; the next OpenLedger decides).
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
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("trigger ledger %s: closed", l.path)
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("trigger ledger %s: write %s: %w", l.path, r.ID, err)
	}
	if durable {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("trigger ledger %s: fsync %s: %w", l.path, r.ID, err)
		}
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
	if l.f == nil {
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
	var buf bytes.Buffer
	n := 0
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
		buf.Write(b)
		buf.WriteByte('\n')
		n++
	}
	if err := writeFileSynced(l.path, buf.Bytes()); err != nil {
		return fmt.Errorf("compact trigger ledger %s: %w", l.path, err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("compact trigger ledger %s: reopen: %w", l.path, err)
	}
	_ = l.f.Close()
	l.f = f
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
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// writeFileSynced replaces path with data atomically: a temporary file in
// the same folder, fsynced, renamed over path, and the folder fsynced.
func writeFileSynced(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o640)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a folder, making a creation or rename in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
