package triggers_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// interruptedLedger returns a ledger at path holding x, an interrupted
// trigger, and y, an answered one.
func interruptedLedger(t *testing.T, path string) *triggers.Ledger {
	t.Helper()
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, queued("x", triggers.Manual, "buy"))
	mustAppend(t, l, triggers.Record{At: t0, ID: "x", State: triggers.StateRunning})
	mustAppend(t, l, triggers.Record{At: t0, ID: "x", State: triggers.StateSent, Session: "s1", Turn: 2})
	mustAppend(t, l, triggers.Record{At: t0, ID: "x", State: triggers.StateInterrupted, Session: "s1", Turn: 2, Reason: "cut off"})
	mustAppend(t, l, queued("y", triggers.Manual, "hello"))
	mustAppend(t, l, triggers.Record{At: t0, ID: "y", State: triggers.StateAnswered, Session: "s1", Turn: 3, Reply: "hi"})
	return l
}

// checkAcked fails unless x is interrupted, acknowledged by alice, and
// out of Interrupted.
func checkAcked(t *testing.T, l *triggers.Ledger, when string) {
	t.Helper()
	x, ok := l.Get("x")
	want := triggers.Ack{By: "alice", At: t0.Add(time.Hour), Note: "checked the broker"}
	if !ok || x.Ack == nil || x.Ack.By != want.By || !x.Ack.At.Equal(want.At) || x.Ack.Note != want.Note {
		t.Fatalf("%s: Get(x).Ack = %+v (found %v), want %+v", when, x.Ack, ok, want)
	}
	if x.State != triggers.StateInterrupted || x.Reason != "cut off" || x.Session != "s1" || x.Trigger.Text != "buy" {
		t.Errorf("%s: Get(x) = %+v: want it interrupted as before, with its reason, session and text", when, x)
	}
	if in := l.Interrupted(); len(in) != 0 {
		t.Errorf("%s: Interrupted = %+v, want none: x is acknowledged", when, in)
	}
}

// TestLedgerAcknowledge: only an interrupted trigger is acknowledged; the
// first acknowledgement stands; it survives a reopen with the persisted
// index, one without it, and a compaction.
func TestLedgerAcknowledge(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := interruptedLedger(t, path)
	if in := l.Interrupted(); len(in) != 1 || in[0].Trigger.ID != "x" {
		t.Fatalf("Interrupted = %+v, want x", in)
	}
	if _, _, err := l.Acknowledge("y", triggers.Ack{By: "alice", At: t0}); !errors.Is(err, triggers.ErrNotInterrupted) {
		t.Errorf("Acknowledge(y), answered = %v, want ErrNotInterrupted", err)
	}
	if _, _, err := l.Acknowledge("nope", triggers.Ack{By: "alice", At: t0}); !errors.Is(err, triggers.ErrUnknownTrigger) {
		t.Errorf("Acknowledge(nope) = %v, want ErrUnknownTrigger", err)
	}
	it, already, err := l.Acknowledge("x", triggers.Ack{By: "alice", At: t0.Add(time.Hour), Note: "checked the broker"})
	if err != nil || already || it.Ack == nil {
		t.Fatalf("Acknowledge(x) = %+v, %v, %v", it, already, err)
	}
	checkAcked(t, l, "acknowledged")
	records := l.Records()
	it, already, err = l.Acknowledge("x", triggers.Ack{By: "bob", At: t0.Add(2 * time.Hour), Note: "again"})
	if err != nil || !already || it.Ack == nil || it.Ack.By != "alice" {
		t.Errorf("second Acknowledge(x) = %+v, %v, %v: want alice's to stand", it.Ack, already, err)
	}
	if l.Records() != records {
		t.Errorf("the second acknowledgement wrote a record: %d, want %d", l.Records(), records)
	}
	checkAcked(t, l, "acknowledged twice")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + triggers.IndexSuffix); err != nil {
		t.Fatalf("no persisted index after Close: %v", err)
	}

	l = openLedger(t, path)
	checkAcked(t, l, "reopened with the persisted index")
	_ = l.Close()
	if err := os.Remove(path + triggers.IndexSuffix); err != nil {
		t.Fatal(err)
	}
	l = openLedger(t, path)
	checkAcked(t, l, "reopened from the whole file")
	if err := l.Compact(t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	checkAcked(t, l, "compacted")
	_ = l.Close()
	l = openLedger(t, path)
	checkAcked(t, l, "compacted and reopened")
	if _, already, _ := l.Acknowledge("x", triggers.Ack{By: "bob", At: t0}); !already {
		t.Errorf("Acknowledge(x) after the compaction: not already acknowledged")
	}
}
