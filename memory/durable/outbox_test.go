package durable_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory/durable"
)

// outboxLine is the line format of the test outbox.
type outboxLine struct {
	Seq  uint64 `json:"seq,omitempty"`
	Text string `json:"text,omitempty"`
	Sent uint64 `json:"sent,omitempty"`
}

// openTestOutbox opens an outbox of strings at path.
func openTestOutbox(t *testing.T, path string, maxBytes int64) *durable.Outbox[string] {
	t.Helper()
	o, sc, err := durable.OpenOutbox(durable.OutboxOptions[string]{
		Path: path, Perm: 0o600, MaxBytes: maxBytes, Name: "the test outbox", SyncAdd: true,
		Encode: func(seq uint64, s string) ([]byte, error) { return json.Marshal(outboxLine{Seq: seq, Text: s}) },
		Mark: func(seq uint64) []byte {
			line, _ := json.Marshal(outboxLine{Sent: seq})
			return line
		},
		Decode: func(line []byte) (uint64, uint64, string, bool) {
			var l outboxLine
			err := json.Unmarshal(line, &l)
			return l.Seq, l.Sent, l.Text, err == nil
		},
	})
	if err != nil {
		t.Fatalf("open the outbox: %v", err)
	}
	if sc.Torn != nil || len(sc.Skipped) > 0 {
		t.Fatalf("open the outbox: damage %+v", sc)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// An outbox gives its entries in order, keeps across a reopen exactly
// those not finished (their seqs going on), says which were there at
// open, refuses an entry past its bound, and compacts what was finished.
func TestOutboxKeepsWhatWaitsAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	o := openTestOutbox(t, path, 1<<10)
	for _, s := range []string{"a", "b", "c"} {
		if kept, err := o.Add(s); !kept || err != nil {
			t.Fatalf("add %s: %v %v", s, kept, err)
		}
	}
	e, ok := o.Head()
	if !ok || e.Seq != 1 || e.Item != "a" {
		t.Fatalf("head %+v %v, want 1 a", e, ok)
	}
	if waiting, err := o.Finish(1); waiting != 2 || err != nil {
		t.Fatalf("finish 1: %d waiting, %v; want 2", waiting, err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	o = openTestOutbox(t, path, 1<<10)
	if waiting, _ := o.Counts(); waiting != 2 {
		t.Fatalf("after the reopen %d waiting, want 2", waiting)
	}
	e, _ = o.Head()
	if e.Seq != 2 || e.Item != "b" || !o.WasResumed(2) || !o.WasResumed(3) {
		t.Fatalf("head after the reopen %+v (resumed %v), want 2 b resumed", e, o.WasResumed(2))
	}
	if _, err := o.Add("d"); err != nil {
		t.Fatal(err)
	}
	if o.WasResumed(4) {
		t.Error("entry 4, added after the reopen, is said to be resumed")
	}
	if kept, err := o.Add(strings.Repeat("x", 2<<10)); kept || err != nil {
		t.Errorf("an entry past the bound: kept %v, %v; want refused", kept, err)
	}
	for seq := uint64(2); seq <= 4; seq++ {
		if _, err := o.Finish(seq); err != nil {
			t.Fatal(err)
		}
	}
	if waiting, _ := o.Counts(); waiting != 0 {
		t.Fatalf("%d waiting after finishing all, want 0", waiting)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o = openTestOutbox(t, path, 1<<10)
	if waiting, _ := o.Counts(); waiting != 0 {
		t.Fatalf("%d waiting after a reopen with all finished, want 0", waiting)
	}
	if _, err := o.Add("e"); err != nil {
		t.Fatal(err)
	}
	if e, _ := o.Head(); e.Seq != 5 {
		t.Errorf("the next entry after all were finished has seq %d, want 5", e.Seq)
	}
}

// An outbox that keeps and finishes many more entries than its bound
// holds compacts its file: it never grows past the bound, every entry is
// kept, and the seqs go on.
func TestOutboxCompactsWhatIsFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	const maxBytes = 120
	o := openTestOutbox(t, path, maxBytes)
	for i := range 50 {
		if kept, err := o.Add("entry"); !kept || err != nil {
			t.Fatalf("add %d: kept %v, %v", i, kept, err)
		}
		e, _ := o.Head()
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i+1, e.Seq)
		}
		if _, err := o.Finish(e.Seq); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, size := o.Counts(); fi.Size() > maxBytes || size != fi.Size() {
			t.Fatalf("after entry %d the file has %d bytes (counted %d), bound %d", i+1, fi.Size(), size, maxBytes)
		}
	}
}
