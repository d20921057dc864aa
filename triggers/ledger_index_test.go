package triggers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/triggers"
)

// refLedger is what a ledger that decodes and keeps every record whole
// (deskd's ledger before its index) knows of a file: the oracle of
// FuzzLedgerIndex.
type refLedger struct {
	items    map[string]*triggers.Item
	order    []string // ids in the order first seen
	lastSlot map[string]time.Time
	records  int
	torn     int
}

func refOpen(data []byte) *refLedger {
	ref := &refLedger{items: map[string]*triggers.Item{}, lastSlot: map[string]time.Time{}}
	sc, end, _ := durable.ScanRecords(data, func(line []byte) bool {
		var r triggers.Record
		if json.Unmarshal(line, &r) != nil || r.ID == "" {
			return false
		}
		ref.apply(r)
		ref.records++
		return true
	})
	ref.torn = len(sc.Skipped)
	if end < int64(len(data)) {
		ref.torn++
	}
	return ref
}

// apply is the fold of deskd's ledger before its index.
func (ref *refLedger) apply(r triggers.Record) {
	e := ref.items[r.ID]
	if e == nil {
		e = &triggers.Item{Trigger: triggers.Trigger{ID: r.ID}}
		ref.items[r.ID] = e
		ref.order = append(ref.order, r.ID)
	}
	if r.Trigger != nil {
		e.Trigger = *r.Trigger
	}
	e.State, e.Updated = r.State, r.At
	switch r.State {
	case triggers.StateQueued:
		if e.QueuedAt.IsZero() {
			e.QueuedAt = r.At
		}
	case triggers.StateRunning:
		e.StartedAt = r.At
	case triggers.StateSent:
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
	if r.State == triggers.StateQueued || r.AtOnce {
		e.AtOnce = r.AtOnce
	}
	if r.Schedule != "" {
		e.Schedule, e.Slot = r.Schedule, r.Slot
		if last, ok := ref.lastSlot[r.Schedule]; !ok || r.Slot.After(last) {
			ref.lastSlot[r.Schedule] = r.Slot
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
		ref.apply(triggers.Record{At: r.At, ID: id, State: triggers.StateMerged, MergedInto: r.ID})
	}
}

// exported returns the exported fields of it, to compare Items made by
// different ledgers (their unexported order differs in kind, not in use).
func exported(it triggers.Item) []any {
	v := reflect.ValueOf(it)
	var out []any
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			out = append(out, v.Field(i).Interface())
		}
	}
	return out
}

// sameItems compares lists of Items by their exported fields.
func sameItems(a, b []triggers.Item) bool {
	return slices.EqualFunc(a, b, func(x, y triggers.Item) bool { return reflect.DeepEqual(exported(x), exported(y)) })
}

// addLedgerSeeds adds FuzzOpenLedger's corpus and lines of every form a
// decoder might get wrong.
func addLedgerSeeds(f *testing.F) {
	dir := filepath.Join("testdata", "fuzz", "FuzzOpenLedger")
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "[]byte("); ok {
				if v, err := strconv.Unquote(strings.TrimSuffix(s, ")")); err == nil {
					f.Add([]byte(v))
				}
			}
		}
	}
	for _, s := range []string{
		`{"at":"2026-03-02T04:00:00Z","id":"a","state":"queued","trigger":{"id":"a","desk":"main","kind":"market","text":"tick \"a\" \u003c","at":"2026-03-02T04:00:00Z","source":"api","key":"K","merged":2}}` + "\n" +
			`{"at":"2026-03-02T04:00:01Z","id":"b","state":"queued","merges":["a"],"schedule":"brief","slot":"2026-03-02T04:00:00Z"}` + "\n" +
			`{"at":"2026-03-02T04:00:02Z","id":"b","state":"answered","session":"s","turn":3,"reply":"ok\n","reason":""}` + "\n",
		`{"id":"a","ID":"b","state":"queued"}` + "\n",
		`{"at":"2026-03-02T04:00:00Z","id":"a","state":"queued","trigger":{"id":"a","text":"x"},"at_once":true}` + "\n" +
			`{"at":"2026-03-02T04:00:01Z","id":"a","state":"sent","session":"s","turn":1}` + "\n" +
			`{"at":"2026-03-02T04:00:02Z","id":"a","state":"queued","reason":"queued again"}` + "\n" +
			`{"at":"2026-03-02T04:00:03Z","id":"c","state":"sent","at_once":true,"sent_at":"2026-03-02T04:00:03Z"}` + "\n",
		`{"id":"a","state":"queued","at_once":1}` + "\n" + `{"id":"b","state":"queued","at_once":false}` + "\n",
		`{"id":"a","state":"queued","at_once":null}` + "\n",
		`{"id":"a","id":"b","state":"sent"}` + "\n",
		`{"id":"a","state":null,"turn":null,"trigger":null}` + "\n",
		`{"id":"a","state":"queued","turn":1.5}` + "\n",
		`{"id":"a","state":"queued","turn":99999999999999999999}` + "\n",
		`{"id":"a","state":"queued","turn":-0}` + "\n",
		`{"id":"a","state":"queued","turn":"1"}` + "\n",
		`{"id":"a","state":"queued","trigger":{"at":"yesterday"}}` + "\n",
		`{"id":"a","state":"queued","trigger":{"merged":true}}` + "\n",
		`{"id":"a","state":"queued","trigger":"x"}` + "\n",
		`{"id":"a","state":"queued","trigger":{"text":"x"},"trigger":{"desk":"d"}}` + "\n",
		`{"id":"a","state":"queued","merges":["",null,"a"]}` + "\n",
		`{"id":"a","state":"queued","merges":"b"}` + "\n",
		`{"id":"\u0061","state":"interrupted","at":"2026-03-02T04:00:00+05:30"}` + "\n",
		`{"id":"a","state":"queued","slot":"2026-03-02T04:00:00.123456789Z","schedule":"s"}` + "\n",
		`{"id":"a","state":"queued","at":"2026-03-02 04:00:00Z"}` + "\n",
		`{"id":"a","state":"queued","reply":"\x01"}` + "\n",
		`{"id":"a","state":"queued","reply":"\q"}` + "\n",
		"{\"id\":\"\xff\",\"state\":\"queued\"}\n",
		` { "id" : "a" , "state" : "sent" } ` + "\n",
		`{"id":"a","state":"queued"}x` + "\n",
		`{"id":"a","state":"queued","x":{"id":"b"}}` + "\n",
		`{"id":"x","sta{"id":"b","state":"queued"}` + "\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzLedgerIndex: on a file of any bytes, the ledger's index (its plain
// form scanner, its decode of the index's fields, its reads of finished
// triggers back from the file) knows exactly what a ledger that decodes
// and keeps every record whole knows: the same records, damage, triggers,
// Items, unfinished and interrupted triggers in the same order, and slots.
func FuzzLedgerIndex(f *testing.F) {
	addLedgerSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ref := refOpen(data)
		path := ledgerFile(t, data)
		l, err := triggers.OpenLedger(path)
		if err != nil {
			t.Fatalf("OpenLedger: %v", err)
		}
		defer l.Close()
		if l.Records() != ref.records || l.Torn() != ref.torn || l.Len() != len(ref.items) {
			t.Fatalf("Records, Torn, Len = %d, %d, %d; want %d, %d, %d\nfile: %q",
				l.Records(), l.Torn(), l.Len(), ref.records, ref.torn, len(ref.items), data)
		}
		var unfinished, interrupted []triggers.Item
		for _, id := range ref.order {
			want := ref.items[id]
			got, ok := l.Get(id)
			if !ok || !reflect.DeepEqual(exported(got), exported(*want)) {
				t.Fatalf("Get(%q) = %+v, %v\nwant %+v\nfile: %q", id, got, ok, *want, data)
			}
			if !want.State.Terminal() {
				unfinished = append(unfinished, *want)
			}
			if want.State == triggers.StateInterrupted {
				interrupted = append(interrupted, *want)
			}
		}
		if got := l.Unfinished(); !sameItems(got, unfinished) {
			t.Fatalf("Unfinished = %+v\nwant %+v\nfile: %q", got, unfinished, data)
		}
		if got := l.Interrupted(); !sameItems(got, interrupted) {
			t.Fatalf("Interrupted = %+v\nwant %+v\nfile: %q", got, interrupted, data)
		}
		for s, want := range ref.lastSlot {
			if got, ok := l.LastSlot(s); !ok || !got.Equal(want) {
				t.Fatalf("LastSlot(%q) = %v, %v; want %v", s, got, ok, want)
			}
		}

		// A compaction that drops nothing (no time is before the zero
		// time, but a year 0 is) changes nothing the ledger answers, nor
		// does a reopen of the compacted file.
		for id, it := range ref.items {
			if it.Updated.Before(time.Time{}) || id == "" { // dropped: "" cannot be a record
				return
			}
		}
		if err := l.Compact(time.Time{}); err != nil {
			t.Fatalf("Compact: %v", err)
		}
		check := func(l *triggers.Ledger, when string) {
			t.Helper()
			if l.Len() != len(ref.items) {
				t.Fatalf("%s: Len = %d, want %d", when, l.Len(), len(ref.items))
			}
			for _, id := range ref.order {
				if got, ok := l.Get(id); !ok || !reflect.DeepEqual(exported(got), exported(*ref.items[id])) {
					t.Fatalf("%s: Get(%q) = %+v, %v\nwant %+v\nfile: %q", when, id, got, ok, *ref.items[id], data)
				}
			}
			if got := l.Unfinished(); !sameItems(got, unfinished) {
				t.Fatalf("%s: Unfinished = %+v\nwant %+v\nfile: %q", when, got, unfinished, data)
			}
			if got := l.Interrupted(); !sameItems(got, interrupted) {
				t.Fatalf("%s: Interrupted = %+v\nwant %+v\nfile: %q", when, got, interrupted, data)
			}
		}
		check(l, "after a compaction")
		_ = l.Close()
		l2, err := triggers.OpenLedger(path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l2.Close()
		check(l2, "after a compaction and a reopen")
	})
}
