package triggers_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// persistIDs are the triggers FuzzLedgerPersist's operations name.
var persistIDs = []string{"a", "b", "c", "d", "e", "f"}

// ledgerView is everything a ledger answers, to compare two of them.
type ledgerView struct {
	Records, Torn, Len int
	TornAt, TornBytes  int64
	Skipped            string
	Items              map[string][]any
	Unfinished         []string
	Interrupted        []string
	Slots              map[string]time.Time
}

func viewOf(l *triggers.Ledger) ledgerView {
	v := ledgerView{Records: l.Records(), Torn: l.Torn(), Len: l.Len(), Items: map[string][]any{}, Slots: map[string]time.Time{}}
	torn, skipped := l.Damage()
	if torn != nil {
		v.TornAt, v.TornBytes = torn.Offset, int64(torn.Bytes)
	}
	v.Skipped = fmt.Sprint(skipped)
	for _, id := range persistIDs {
		if it, ok := l.Get(id); ok {
			v.Items[id] = exported(it)
		}
	}
	for _, it := range l.Unfinished() {
		v.Unfinished = append(v.Unfinished, fmt.Sprint(exported(it)))
	}
	for _, it := range l.Interrupted() {
		v.Interrupted = append(v.Interrupted, fmt.Sprint(exported(it)))
	}
	for _, s := range []string{"s1", "s2"} {
		if at, ok := l.LastSlot(s); ok {
			v.Slots[s] = at.UTC()
		}
	}
	return v
}

// openBoth opens the ledger at path (with its persisted index, if any) and
// a copy of its file without one (the whole file read), and fails unless
// they answer the same.
func openBoth(t *testing.T, path string, step int) *triggers.Ledger {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	refPath := filepath.Join(t.TempDir(), triggers.LedgerFile)
	if err := os.WriteFile(refPath, data, 0o640); err != nil {
		t.Fatal(err)
	}
	ref, err := triggers.OpenLedger(refPath)
	if err != nil {
		t.Fatalf("step %d: open the copy: %v", step, err)
	}
	want := viewOf(ref)
	_ = ref.Close()
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatalf("step %d: open: %v", step, err)
	}
	if got := viewOf(l); !reflect.DeepEqual(got, want) {
		t.Fatalf("step %d: with the persisted index:\n%+v\nreading the whole file:\n%+v\nfile: %q", step, got, want, data)
	}
	return l
}

// FuzzLedgerPersist: after any sequence of appends, notes, compactions,
// clean closes, crashes (no Close), truncations and torn tails of the
// ledger, and damaged, foreign or stale persisted indexes, the ledger
// opened with its persisted index answers exactly what the same file
// read whole does: a stale or lying index never loses nor invents a
// trigger.
func FuzzLedgerPersist(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 6, 0, 4, 7, 5, 6})
	f.Add([]byte{0, 0, 0, 6, 8, 40, 0, 6, 9, 3})
	f.Add([]byte{0, 10, 1, 11, 2, 12, 6, 5, 0, 6, 9, 1, 0, 7})
	f.Add([]byte{0, 3, 13, 6, 10, 0, 6, 11, 6, 9, 2, 6})
	f.Add([]byte{0, 1, 6, 1, 2, 6, 9, 0, 6, 5, 7, 0, 8, 200, 6})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		path := filepath.Join(t.TempDir(), triggers.LedgerFile)
		idx := path + triggers.IndexSuffix
		l := openBoth(t, path, -1)
		var saved []byte // an older persisted index
		at := t0
		for step := 0; step < len(ops); step++ {
			op := ops[step]
			arg := byte(0)
			if step+1 < len(ops) {
				arg = ops[step+1]
			}
			at = at.Add(time.Second)
			id := persistIDs[int(arg)%len(persistIDs)]
			switch op % 14 {
			case 0: // a new trigger
				tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: "tick " + id, At: at}
				_ = l.Append(triggers.Record{At: at, ID: id, State: triggers.StateQueued, Trigger: &tr})
				step++
			case 1:
				_ = l.Note(triggers.Record{At: at, ID: id, State: triggers.StateRunning})
				step++
			case 2:
				_ = l.Append(triggers.Record{At: at, ID: id, State: triggers.StateSent, Session: "s", Turn: int(arg)})
				step++
			case 3:
				_ = l.Append(triggers.Record{At: at, ID: id, State: triggers.StateAnswered, Session: "s", Turn: int(arg), Reply: "done " + id})
				step++
			case 4:
				_ = l.Append(triggers.Record{At: at, ID: id, State: triggers.StateInterrupted, Reason: "restart"})
				step++
			case 5:
				_ = l.Compact(t0.Add(time.Duration(arg) * time.Second))
				step++
			case 6: // a clean stop
				_ = l.Close()
				l = openBoth(t, path, step)
			case 7: // a crash: no Close
				l = openBoth(t, path, step)
			case 8: // a crash, and the file cut short
				if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
					_ = os.Truncate(path, fi.Size()*int64(arg)/256)
				}
				l = openBoth(t, path, step+1)
				step++
			case 9: // a damaged, cut or stale index
				_ = l.Close()
				if b, err := os.ReadFile(idx); err == nil {
					switch arg % 4 {
					case 0: // (an empty index, cut to nothing before, has no byte to flip)
						if len(b) > 0 {
							b[int(arg)*7%len(b)] ^= 1 << (arg % 8)
						}
					case 1:
						b = b[:int(arg)*3%max(len(b), 1)]
					case 2:
						if saved != nil {
							b = saved
						}
					case 3:
						saved = bytes.Clone(b)
					}
					_ = os.WriteFile(idx, b, 0o640)
				}
				l = openBoth(t, path, step+1)
				step++
			case 10: // a merge
				into := persistIDs[int(arg+1)%len(persistIDs)]
				tr := triggers.Trigger{ID: into, Desk: "main", Kind: triggers.Market, Text: "merged", At: at}
				_ = l.Append(triggers.Record{At: at, ID: into, State: triggers.StateQueued, Trigger: &tr, Merges: []string{id}})
				step++
			case 11: // a scheduled slot
				s := []string{"s1", "s2"}[arg%2]
				_ = l.Append(triggers.Record{At: at, ID: id, State: triggers.StateMissed, Schedule: s, Slot: t0.Add(time.Duration(arg) * time.Minute)})
				step++
			case 12: // a torn tail, and a crash
				_ = appendBytes(path, `{"at":"2026-03-02T04:00:00Z","id":"x`)
				l = openBoth(t, path, step)
			case 13: // a bad line in the middle, then a record
				_ = appendBytes(path, "garbage "+strings.Repeat("x", int(arg))+"\n")
				l = openBoth(t, path, step)
				tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Manual, Text: "after", At: at}
				_ = l.Append(triggers.Record{At: at, ID: id, State: triggers.StateQueued, Trigger: &tr})
				step++
			}
		}
		_ = l.Close()
		l = openBoth(t, path, len(ops))
		_ = l.Close()
	})
}

func appendBytes(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(s)
	return err
}

// persistFile writes a ledger of n answered triggers through a Ledger and
// closes it (leaving its persisted index), and returns its path.
func persistFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("t%04d", i)
		at := t0.Add(time.Duration(i) * time.Minute)
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: "tick " + id, At: at}
		mustAppend(t, l, triggers.Record{At: at, ID: id, State: triggers.StateQueued, Trigger: &tr})
		if i%10 != 9 { // every tenth stays queued
			mustAppend(t, l, triggers.Record{At: at.Add(time.Second), ID: id, State: triggers.StateAnswered, Session: "s", Turn: i + 1, Reply: "reply " + id})
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + triggers.IndexSuffix); err != nil {
		t.Fatalf("no persisted index after Close: %v", err)
	}
	return path
}

// TestLedgerPersistedIndexUsed: the open after a clean Close takes what
// the ledger knows of the records it covers from the persisted index, not
// from the file: a record changed in place where its check does not look
// (in the middle of the file, its length and modification time kept) goes
// unseen, while a record appended after it is read.
func TestLedgerPersistedIndexUsed(t *testing.T) {
	path := persistFile(t, 200)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	i := bytes.Index(data[len(data)/2:], []byte(`"id":"t`)) + len(data)/2 // a record's id, mid-file
	data[i+6] = 'X'
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, path)
	if l.Len() != 200 || len(l.Unfinished()) != 20 || l.Records() != 380 {
		t.Fatalf("Len, Unfinished, Records = %d, %d, %d; want 200, 20, 380", l.Len(), len(l.Unfinished()), l.Records())
	}
	mustAppend(t, l, queued("new", triggers.Manual, "after"))
	_ = l.Close()
	l2 := openLedger(t, path)
	if it, ok := l2.Get("new"); !ok || it.State != triggers.StateQueued || l2.Len() != 201 {
		t.Fatalf("Get(new) = %+v, %v; Len %d", it, ok, l2.Len())
	}
}

// TestLedgerPersistedIndexRefused: an index that is not of the file there
// (the file replaced, cut short, edited in place, or the index damaged,
// cut or of another ledger) is not used: the ledger answers what the file
// read whole does, and sees the change.
func TestLedgerPersistedIndexRefused(t *testing.T) {
	edit := func(path string, f func([]byte) []byte) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	other := persistFile(t, 30)
	for _, tc := range []struct {
		name   string
		change func(path string)
		len    int // what the ledger then knows
	}{
		{"replaced by an edited copy", func(path string) {
			data, _ := os.ReadFile(path)
			data = bytes.Replace(data, []byte(`"id":"t0100"`), []byte(`"id":"u0100"`), 1)
			tmp := path + ".new"
			_ = os.WriteFile(tmp, data, 0o640)
			_ = os.Rename(tmp, path)
		}, 201},
		{"edited in place, same length", func(path string) {
			edit(path, func(b []byte) []byte { return bytes.Replace(b, []byte(`"id":"t0100"`), []byte(`"id":"u0100"`), 1) })
		}, 201},
		{"cut short", func(path string) {
			fi, _ := os.Stat(path)
			_ = os.Truncate(path, fi.Size()/2)
		}, -1},
		{"cut short and grown past the index", func(path string) {
			data, _ := os.ReadFile(path)
			fi, _ := os.Stat(path)
			_ = os.Truncate(path, fi.Size()/2)
			_ = appendBytes(path, string(data[fi.Size()/4:]))
		}, -1},
		{"index damaged", func(path string) {
			edit(path+triggers.IndexSuffix, func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b })
		}, 200},
		{"index cut", func(path string) {
			edit(path+triggers.IndexSuffix, func(b []byte) []byte { return b[:len(b)-3] })
		}, 200},
		{"index of another ledger", func(path string) {
			b, _ := os.ReadFile(other + triggers.IndexSuffix)
			_ = os.WriteFile(path+triggers.IndexSuffix, b, 0o640)
		}, 200},
		{"index a link", func(path string) {
			_ = os.Rename(path+triggers.IndexSuffix, path+".elsewhere")
			_ = os.Symlink(path+".elsewhere", path+triggers.IndexSuffix)
		}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := persistFile(t, 200)
			tc.change(path)
			l := openBoth(t, path, 0)
			defer l.Close()
			if tc.len >= 0 && l.Len() != tc.len {
				t.Fatalf("Len = %d, want %d", l.Len(), tc.len)
			}
		})
	}
}

// TestLedgerRecentFinished: the Item of a trigger just answered is kept
// (its Get does not read the file: a record spoiled under it goes
// unseen), a bounded number of them (the oldest ones are read back again),
// a compaction that leaves a trigger out forgets it, one that keeps it
// keeps it right, and a reopen reads them from the file.
func TestLedgerRecentFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	answer := func(id string, at time.Time) {
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: "tick " + id, At: at}
		mustAppend(t, l, triggers.Record{At: at, ID: id, State: triggers.StateQueued, Trigger: &tr})
		mustAppend(t, l, triggers.Record{At: at, ID: id, State: triggers.StateAnswered, Session: "s", Turn: 1, Reply: "reply-" + id})
	}
	// spoil overwrites the replies in the file, keeping its length: a
	// Get that reads the file back gets another reply.
	spoil := func() {
		data, _ := os.ReadFile(path)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(bytes.ReplaceAll(data, []byte(`"reply-`), []byte(`"spilt-`)), 0); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(id string) string {
		t.Helper()
		it, ok := l.Get(id)
		if !ok {
			t.Fatalf("Get(%s): not found", id)
		}
		return it.Reply
	}
	const n = 300 // more than the ledger keeps
	for i := range n {
		answer(fmt.Sprintf("r%03d", i), t0.Add(time.Duration(i)*time.Minute))
	}
	spoil()
	if got := reply("r299"); got != "reply-r299" {
		t.Fatalf("the trigger answered last: Reply %q, want it kept (reply-r299)", got)
	}
	kept := 0
	for i := n - 1; i >= 0; i-- { // newest first: each read back is kept in turn, pushing out older ones
		switch got := reply(fmt.Sprintf("r%03d", i)); got {
		case fmt.Sprintf("reply-r%03d", i):
			kept++
		case fmt.Sprintf("spilt-r%03d", i): // read back
		default:
			t.Fatalf("Get(r%03d).Reply = %q", i, got)
		}
	}
	if kept != 256 {
		t.Fatalf("%d Items kept, want the last 256", kept)
	}

	// A later record of a finished trigger changes what is kept of it.
	mustAppend(t, l, triggers.Record{At: t0.Add(n * time.Minute), ID: "r299", State: triggers.StateFailed, Reason: "late"})
	if it, _ := l.Get("r299"); it.State != triggers.StateFailed || it.Reason != "late" || it.Reply != "reply-r299" {
		t.Fatalf("after a later record: %+v", it)
	}
	// A compaction that leaves r298 out forgets it; r299 is kept.
	if err := l.Compact(t0.Add(299 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Get("r298"); ok {
		t.Fatalf("Get(r298) after a compaction left it out: found")
	}
	if it, ok := l.Get("r299"); !ok || it.State != triggers.StateFailed || it.Reply != "spilt-r299" && it.Reply != "reply-r299" {
		t.Fatalf("Get(r299) after the compaction = %+v, %v", it, ok)
	}
	_ = l.Close()
	l, err = triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := l.Get("r299"); !ok || it.State != triggers.StateFailed || it.Reason != "late" || l.Len() != 1 {
		t.Fatalf("after a reopen: Get(r299) = %+v, %v; Len %d", it, ok, l.Len())
	}
}
