package triggers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// benchID is the id of the i-th trigger of a bench ledger, of the length
// of the ids a desk makes ("t-" + a time to the millisecond + 10 hex
// digits).
func benchID(i int) string { return fmt.Sprintf("t-20260302T040000.000Z-%010x", i) }

// benchLedgerFile writes a ledger of n finished triggers as a desk leaves
// it (queued with its text, running, sent, answered with a reply: four
// records each), plus open queued ones, and returns its path.
func benchLedgerFile(b *testing.B, n, open int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), triggers.LedgerFile)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	text := strings.Repeat("NIFTY crossed its 20-day high; look at the book and decide. ", 4)
	reply := strings.Repeat("Bought 50 NIFTY futures at the open; stop below yesterday's low. ", 6)
	at := t0
	for i := range n + open {
		id := benchID(i)
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: text, At: at, Source: "api", Key: "NIFTY"}
		recs := []triggers.Record{{At: at, ID: id, State: triggers.StateQueued, Trigger: &tr}}
		if i < n {
			recs = append(recs,
				triggers.Record{At: at.Add(time.Second), ID: id, State: triggers.StateRunning},
				triggers.Record{At: at.Add(2 * time.Second), ID: id, State: triggers.StateSent, Session: "s1", Turn: i + 1},
				triggers.Record{At: at.Add(9 * time.Second), ID: id, State: triggers.StateAnswered, Session: "s1", Turn: i + 1, Reply: reply})
		}
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				b.Fatal(err)
			}
		}
		at = at.Add(time.Minute)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o640); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpenLedger10k opens a ledger of 10,000 finished triggers (and
// 10 queued ones): the time and allocations of OpenLedger, and the heap
// the open ledger keeps after a GC (retained-B/op). full: without a
// persisted index (a ledger deskd did not close, or of an older deskd),
// the whole file is read; indexed: with the one Close leaves.
func BenchmarkOpenLedger10k(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		name := "full"
		if indexed {
			name = "indexed"
		}
		b.Run(name, func(b *testing.B) {
			path := benchLedgerFile(b, 10_000, 10)
			if indexed {
				l, err := triggers.OpenLedger(path)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
			}
			idx, err := os.ReadFile(path + triggers.IndexSuffix)
			if indexed && err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var retained uint64
			for b.Loop() {
				var before, after runtime.MemStats
				b.StopTimer()
				if indexed { // Close rewrote it: the same bytes, a new mtime
					if err := os.WriteFile(path+triggers.IndexSuffix, idx, 0o640); err != nil {
						b.Fatal(err)
					}
				} else {
					_ = os.Remove(path + triggers.IndexSuffix)
				}
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				l, err := triggers.OpenLedger(path)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				if l.Len() != 10_010 || len(l.Unfinished()) != 10 {
					b.Fatalf("Len = %d, Unfinished = %d", l.Len(), len(l.Unfinished()))
				}
				if after.HeapAlloc > before.HeapAlloc {
					retained += after.HeapAlloc - before.HeapAlloc
				}
				_ = l.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(retained)/float64(b.N), "retained-B/op")
		})
	}
}

// BenchmarkLedgerGetFinished is Get of a finished trigger in a 10,000-entry
// ledger (read back from the file) and of an open one.
func BenchmarkLedgerGetFinished(b *testing.B) {
	l := openLedger(b, benchLedgerFile(b, 10_000, 10))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := l.Get(benchID(i % 10_000)); !ok {
			b.Fatal("not found")
		}
		i += 7919
	}
}

// BenchmarkLedgerInterrupted is a status call's look at the ledger
// (Interrupted and Unfinished) in a 10,000-entry ledger.
func BenchmarkLedgerInterrupted(b *testing.B) {
	l := openLedger(b, benchLedgerFile(b, 10_000, 10))
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Interrupted()
		_ = l.Unfinished()
	}
}

// BenchmarkLedgerGetJustAnswered is the Get that follows an answer (the
// API's long poll) in a 10,000-entry ledger: the trigger's Item is kept,
// not read back from the file.
func BenchmarkLedgerGetJustAnswered(b *testing.B) {
	l := openLedger(b, benchLedgerFile(b, 10_000, 10))
	id := benchID(10_000) // the first queued one
	if err := l.Append(triggers.Record{At: t0, ID: id, State: triggers.StateAnswered, Session: "s1", Turn: 1, Reply: "done"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if it, ok := l.Get(id); !ok || it.Reply != "done" {
			b.Fatal("not found")
		}
	}
}
