package triggers

import (
	"encoding/json"
	"errors"
	"hash/maphash"
	"slices"
	"strconv"
	"time"

	"github.com/deskd/deskd/memory/jsonline"
)

// entry is what the ledger keeps in memory of every trigger it knows: enough
// for dedupe, status and compaction, and where in the file its records are.
// The whole Item of a finished trigger is read back from the file. Its slot,
// if it has one, is in Ledger.slots; the trigger it was merged into in
// Ledger.mergedInto.
type entry struct {
	// first and end bound the bytes of the file that hold every record
	// naming the trigger (its own, and those that merged it): the first
	// one begins at first, the last one ends at end.
	first, end int64
	// updSec and updNs are the At of its latest record (an instant is all
	// a comparison needs).
	updSec int64
	updNs  int32
	// idOff and idLen place its id in the index's arena.
	idOff, idLen uint32
	state        stateCode
	// single: its only record is its own, without merges; Compact copies
	// such a record as it is.
	single bool
}

func (e *entry) updated() time.Time { return time.Unix(e.updSec, int64(e.updNs)) }

// slotRef is the schedule and slot of a trigger's latest scheduled record.
type slotRef struct {
	sched *schedule
	sec   int64
	ns    int32
}

func (s slotRef) slot() time.Time { return time.Unix(s.sec, int64(s.ns)) }

// stateCode is a State in an entry: the index of a known state in
// knownStates, or 0 for any other (every other state is final, and not
// interrupted: the index need not tell them apart; Get reads the state
// back).
type stateCode uint8

var knownStates = [...]State{"", StateQueued, StateRunning, StateSent, StateAnswered, StateFailed,
	StateInterrupted, StateDropped, StateMerged, StateMissed, StateArmed, StateAcknowledged}

func codeOf(s State) stateCode {
	for i, k := range knownStates[1:] {
		if s == k {
			return stateCode(i + 1)
		}
	}
	return 0
}

// State returns the state; "" for one not known.
func (c stateCode) State() State { return knownStates[c] }

// Terminal is State.Terminal.
func (c stateCode) Terminal() bool { return c == 0 || c.State().Terminal() }

// schedule is one schedule the ledger has records of; entries share it.
type schedule struct {
	name string
	last time.Time // its latest slot
}

// open reports whether the ledger keeps the whole Item of a trigger in s:
// a trigger queued, running or sent, or an interrupted one (status lists
// them).
func open(s State) bool { return !s.Terminal() || s == StateInterrupted }

// open is open of the state.
func (c stateCode) open() bool { return c != 0 && open(c.State()) }

// intern returns the constant of a known state, so that the decoded string
// is not kept.
func intern(s State) State {
	if c := codeOf(s); c != 0 {
		return c.State()
	}
	return s
}

// internBytes is intern of a state read as bytes: a known state costs no
// allocation.
func internBytes(b []byte) State {
	for _, k := range knownStates[1:] {
		if string(b) == string(k) {
			return k
		}
	}
	return State(b)
}

// indexFields are the fields of a Record the index needs.
type indexFields struct {
	At         time.Time
	ID         string
	State      State
	Schedule   string
	Slot       time.Time
	Merges     []string
	MergedInto string
}

func fieldsOf(r *Record) indexFields {
	return indexFields{At: r.At, ID: r.ID, State: r.State, Schedule: r.Schedule, Slot: r.Slot, Merges: r.Merges, MergedInto: r.MergedInto}
}

// indexRecord decodes a ledger line into the fields the index needs and
// checks the others without keeping them: it accepts exactly the lines
// that decode into a Record (same keys, same types, same errors), so that
// OpenLedger finds the same records, damage and glued records as a whole
// decode would, for a fraction of its allocations.
type indexRecord struct {
	At         time.Time    `json:"at"`
	ID         string       `json:"id"`
	State      State        `json:"state"`
	Trigger    checkTrigger `json:"trigger"`
	Schedule   string       `json:"schedule"`
	Slot       time.Time    `json:"slot"`
	Merges     []string     `json:"merges"`
	MergedInto string       `json:"merged_into"`
	Session    checkString  `json:"session"`
	Turn       checkInt     `json:"turn"`
	Reply      checkString  `json:"reply"`
	Reason     checkString  `json:"reason"`
	QueuedAt   checkTime    `json:"queued_at"`
	StartedAt  checkTime    `json:"started_at"`
	SentAt     checkTime    `json:"sent_at"`
	AtOnce     bool         `json:"at_once"`
	Ack        *Ack         `json:"ack"` // rare: decodeFast leaves its lines to encoding/json
}

// checkTrigger checks what decodes into a Record's *Trigger.
type checkTrigger struct{}

// checkedTrigger mirrors Trigger's fields, checked and not kept.
type checkedTrigger struct {
	ID     checkString `json:"id"`
	Desk   checkString `json:"desk"`
	Kind   checkString `json:"kind"`
	Text   checkString `json:"text"`
	At     checkTime   `json:"at"`
	Source checkString `json:"source"`
	Key    checkString `json:"key"`
	Merged checkInt    `json:"merged"`
}

var errNotField = errors.New("trigger ledger: a field of the wrong type")

// UnmarshalJSON accepts null or what decodes into a Trigger.
func (checkTrigger) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var t checkedTrigger
	return json.Unmarshal(b, &t)
}

// checkString checks what decodes into a string: a JSON string or null.
type checkString struct{}

// UnmarshalJSON accepts a string or null.
func (checkString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' || string(b) == "null" {
		return nil
	}
	return errNotField
}

// checkInt checks what decodes into an int: an integer or null.
type checkInt struct{}

// UnmarshalJSON accepts an integer that fits an int64, or null.
func (checkInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
		return errNotField
	}
	return nil
}

// checkTime checks what decodes into a time.Time.
type checkTime struct{}

// UnmarshalJSON accepts what time.Time does.
func (checkTime) UnmarshalJSON(b []byte) error {
	var t time.Time
	return t.UnmarshalJSON(b)
}

// decodeIndex decodes line for the index. ok is false when line is not a
// record (it does not decode into a Record, or it has no id).
func decodeIndex(line []byte) (indexFields, bool) {
	if r, ok := decodeFast(line); ok {
		return r, true
	}
	var r indexRecord
	if json.Unmarshal(line, &r) != nil || r.ID == "" {
		return indexFields{}, false
	}
	return indexFields{At: r.At, ID: r.ID, State: intern(r.State), Schedule: r.Schedule, Slot: r.Slot, Merges: r.Merges, MergedInto: r.MergedInto}, true
}

// decodeRecord decodes line whole; ok as for decodeIndex.
func decodeRecord(line []byte) (Record, bool) {
	var r Record
	if json.Unmarshal(line, &r) != nil || r.ID == "" {
		return Record{}, false
	}
	return r, true
}

// fold applies r to it, what the ledger knows of trigger id: r's own
// changes when r is id's record, then its merge of id (state merged) for
// each time r names id in its merges.
func fold(it *Item, r *Record, id string) {
	if r.ID == id {
		foldOwn(it, r)
	}
	for _, m := range r.Merges {
		if m == id {
			foldOwn(it, &Record{At: r.At, ID: m, State: StateMerged, MergedInto: r.ID})
		}
	}
}

// foldOwn applies r, a record of e's trigger, to e.
func foldOwn(e *Item, r *Record) {
	if r.State == StateAcknowledged {
		foldAck(e, r)
		return
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
	if !r.QueuedAt.IsZero() {
		e.QueuedAt = r.QueuedAt
	}
	if !r.StartedAt.IsZero() {
		e.StartedAt = r.StartedAt
	}
	if !r.SentAt.IsZero() {
		e.SentAt = r.SentAt
	}
	if r.State == StateQueued || r.AtOnce {
		e.AtOnce = r.AtOnce // a compacted record of an open trigger keeps it
	}
	if r.Schedule != "" {
		e.Schedule, e.Slot = r.Schedule, r.Slot
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
}

// compactRecord is the one record that stands for it, trigger id's whole
// history, in a compacted ledger.
func compactRecord(id string, it *Item) Record {
	t := it.Trigger
	state := it.State
	if it.Ack != nil {
		state = StateAcknowledged // folded back by foldAck
	}
	return Record{
		At: it.Updated, ID: id, State: state, Ack: it.Ack, Trigger: &t, Schedule: it.Schedule, Slot: it.Slot,
		MergedInto: it.MergedInto, Session: it.Session, Turn: it.Turn, Reply: it.Reply, Reason: it.Reason,
		QueuedAt: it.QueuedAt, StartedAt: it.StartedAt, SentAt: it.SentAt, AtOnce: it.AtOnce,
	}
}

// The keys of a Record and of its Trigger, as json.Marshal writes them.
var (
	recordKeys  = [...]string{"at", "id", "state", "trigger", "schedule", "slot", "merges", "merged_into", "session", "turn", "reply", "reason", "queued_at", "started_at", "sent_at", "at_once"}
	triggerKeys = [...]string{"id", "desk", "kind", "text", "at", "source", "key", "merged"}
)

// decodeFast decodes a line of the plain form json.Marshal gives a
// Record, as decodeIndex does, without reflection. ok is false when the
// line is of another form (escapes in a kept string, nulls, unknown or
// repeated keys, ...) or is not a record: decodeIndex decides those.
func decodeFast(line []byte) (indexFields, bool) {
	var r indexFields
	s := jsonline.New(line)
	ok := s.Object(recordKeys[:], func(k int) bool {
		var v []byte
		var ok bool
		switch recordKeys[k] {
		case "at":
			r.At, ok = s.Time()
		case "id":
			v, ok = s.Plain()
			r.ID = string(v)
		case "state":
			v, ok = s.Plain()
			r.State = internBytes(v)
		case "schedule":
			v, ok = s.Plain()
			r.Schedule = string(v)
		case "merged_into":
			v, ok = s.Plain()
			r.MergedInto = string(v)
		case "slot":
			r.Slot, ok = s.Time()
		case "queued_at", "started_at", "sent_at":
			_, ok = s.Time()
		case "at_once":
			_, ok = s.Bool()
		case "session", "reply", "reason":
			ok = s.Str()
		case "turn":
			_, ok = s.Int()
		case "merges":
			if !s.Byte('[') {
				return false
			}
			r.Merges = []string{}
			if s.Byte(']') {
				return true
			}
			for {
				if v, ok = s.Plain(); !ok {
					return false
				}
				r.Merges = append(r.Merges, string(v))
				if s.Byte(']') {
					return true
				}
				if !s.Byte(',') {
					return false
				}
			}
		case "trigger":
			if !s.Peek('{') {
				return false
			}
			ok = s.Object(triggerKeys[:], func(k int) bool {
				switch triggerKeys[k] {
				case "at":
					_, ok := s.Time()
					return ok
				case "merged":
					_, ok := s.Int()
					return ok
				}
				return s.Str()
			})
		}
		return ok
	})
	if !ok || !s.End() || r.ID == "" {
		return indexFields{}, false
	}
	return r, true
}

// index is the ledger's entries, found by trigger id without a string or
// a map slot per trigger: the ids lie end to end in one arena, and an
// open-addressing table holds entry numbers. An entry's number is its
// order of first appearance (its seq, less one). Entries are only ever
// added; a compaction builds a new index of the ones it keeps.
type index struct {
	seed  maphash.Seed
	arena []byte
	ents  []entry
	table []uint32 // 0: empty; else an entry's number + 1. Its length is a power of 2.
}

func newIndex() *index { return &index{seed: maphash.MakeSeed()} }

func (x *index) id(i int) string { e := &x.ents[i]; return string(x.arena[e.idOff : e.idOff+e.idLen]) }

func (x *index) idIs(i int, id string) bool {
	e := &x.ents[i]
	return int(e.idLen) == len(id) && string(x.arena[e.idOff:e.idOff+e.idLen]) == id
}

func (x *index) hash(id string) uint64 { return maphash.String(x.seed, id) }

// find returns the number of the entry of id.
func (x *index) find(id string) (int, bool) {
	if len(x.table) == 0 {
		return 0, false
	}
	mask := uint64(len(x.table) - 1)
	for h := x.hash(id) & mask; ; h = (h + 1) & mask {
		n := x.table[h]
		if n == 0 {
			return 0, false
		}
		if x.idIs(int(n-1), id) {
			return int(n - 1), true
		}
	}
}

// add adds an entry for id, which has none, and returns its number.
func (x *index) add(id string, e entry) int {
	if 2*(len(x.ents)+1) > len(x.table) {
		x.grow(max(64, 2*len(x.table)))
	}
	e.idOff, e.idLen = uint32(len(x.arena)), uint32(len(id))
	x.arena = append(x.arena, id...)
	x.ents = append(x.ents, e)
	x.place(len(x.ents) - 1)
	return len(x.ents) - 1
}

func (x *index) place(i int) {
	e := &x.ents[i]
	mask := uint64(len(x.table) - 1)
	h := maphash.Bytes(x.seed, x.arena[e.idOff:e.idOff+e.idLen]) & mask
	for x.table[h] != 0 {
		h = (h + 1) & mask
	}
	x.table[h] = uint32(i + 1)
}

func (x *index) grow(size int) {
	x.table = make([]uint32, size)
	for i := range x.ents {
		x.place(i)
	}
}

// clip gives the index's slices their length as capacity, so that an
// index done growing (opened) keeps no spare room.
func (x *index) clip() {
	if cap(x.arena) > len(x.arena) {
		x.arena = slices.Clone(x.arena)
	}
	if cap(x.ents) > len(x.ents) {
		x.ents = slices.Clone(x.ents)
	}
}
