package triggers_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// BenchmarkLedgerAppend measures one durable ledger record (encode,
// append, fsync, index) of a trigger's life: each op appends the next of
// queued, running, sent and answered for a stream of triggers, as a turn
// does. The fsync dominates:
//
//	go test -run '^$' -bench BenchmarkLedgerAppend -benchmem ./triggers
func BenchmarkLedgerAppend(b *testing.B) {
	l, err := triggers.OpenLedger(filepath.Join(b.TempDir(), triggers.LedgerFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	at := time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)
	states := []triggers.State{triggers.StateQueued, triggers.StateRunning, triggers.StateSent, triggers.StateAnswered}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		n, st := i/len(states), states[i%len(states)]
		id := fmt.Sprintf("t%d", n)
		r := triggers.Record{At: at.Add(time.Duration(i) * time.Millisecond), ID: id, State: st}
		switch st {
		case triggers.StateQueued:
			r.Trigger = &triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: "market event: NIFTY 22,000", At: r.At, Source: "api"}
		case triggers.StateSent:
			r.Session, r.Turn = "20260302T040000Z-bench", n+1
		case triggers.StateAnswered:
			r.Session, r.Turn, r.Reply = "20260302T040000Z-bench", n+1, "noted"
		}
		if err := l.Append(r); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if got, want := l.Records(), i; got != want {
		b.Fatalf("the ledger holds %d records, want %d", got, want)
	}
}
