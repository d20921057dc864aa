package router_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// benchRecords is the size of the session a restore benchmark restores.
const benchRecords = 10000

// writeBenchSession writes, under dir, a desk folder whose current session
// holds n records (a header, then turns of a user message and an answer
// carrying its usage), as a deskd of before marks wrote them, with a
// state file of that deskd: its spend as of the end of the file. With
// checkpointAt > 0, a compaction checkpoint is written at that record.
// It returns the desk's folder path.
func writeBenchSession(b *testing.B, dir string, n, checkpointAt int) string {
	b.Helper()
	desk := filepath.Join(dir, "desks", "main")
	if err := os.MkdirAll(filepath.Join(desk, memory.SessionsDir), 0o750); err != nil {
		b.Fatal(err)
	}
	const id = "20260301T000000Z-00000001"
	f, err := os.Create(filepath.Join(desk, memory.SessionsDir, id+".jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	at := desktest.At("2026-03-01T03:30:00Z")
	put := func(rec memory.Record) {
		if err := enc.Encode(rec); err != nil {
			b.Fatal(err)
		}
	}
	put(memory.Record{Type: memory.RecordHeader, At: at, Session: id, Desk: "main", Date: "2026-03-01"})
	var tokens int64
	question := strings.Repeat("NIFTY 22000 CE OI up 4%, PCR 0.91, IV 13.2. ", 4)
	answer := strings.Repeat("Hold the spread; the skew is flat and the book is within limits. ", 5)
	for i := 1; i < n; i++ {
		at = at.Add(time.Second)
		trig := fmt.Sprintf("t%d", (i+1)/2)
		switch {
		case i == checkpointAt:
			put(memory.Record{Type: memory.RecordCheckpoint, At: at, Trigger: trig, Text: "The morning so far: " + answer})
		case i%2 == 1:
			put(memory.Record{Type: memory.RecordMessage, At: at, Role: "user", Text: question, Trigger: trig, Kind: "market"})
		default:
			u := memory.Usage{InputTokens: 1200, OutputTokens: 80}
			tokens += int64(u.InputTokens + u.OutputTokens)
			put(memory.Record{Type: memory.RecordMessage, At: at, Role: "assistant", Text: answer, Trigger: trig,
				Model: "offline", Provider: "scripted", Scripted: true, Usage: &u, DurationMS: 3})
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	state := fmt.Sprintf(`{"session": %q, "trading_date": "2026-03-01", "spend": {"trading_date": "2026-03-01", "day_tokens": %d, "day_cost": 0, "session_tokens": %d}}`,
		id, tokens, tokens)
	if err := os.WriteFile(filepath.Join(desk, memory.StateFile), []byte(state), 0o640); err != nil {
		b.Fatal(err)
	}
	return desk
}

// benchRouter returns a router over the desk folder at dir, not restored.
func benchRouter(b *testing.B, dir string, c clock.Clock, bus *event.Bus) *router.Router {
	b.Helper()
	folder, err := memory.OpenFolder(dir, "main", c.Now)
	if err != nil {
		b.Fatal(err)
	}
	r, err := router.New(router.Options{
		Desk: "main", Folder: folder, Clock: c, Day: desktest.Day(), Bus: bus,
		Settings: router.Settings{Route: []router.Model{offline}, Instructions: "You are a bench desk."},
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkRestoreSession restores a desk whose session holds 10,000
// records: the time and allocations of RestoreSession, and the heap each
// restored router keeps (retained-B/op: HeapInuse after a GC, with every
// restored router alive, over the routers). "first use" adds the
// session's first use (Context, which reads its history and otherwise
// only sums estimates). The desk is
// restored once, and closed, before the timing, as a desk that ran once:
// a deskd that marks its state file has marked it by then.
func BenchmarkRestoreSession(b *testing.B) {
	cases := []struct {
		name       string
		checkpoint int
		firstUse   bool
	}{
		{"restore", 0, false},
		{"restore+first use", 0, true},
		{"restore+first use, checkpoint at 9000", 9000, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			dir := writeBenchSession(b, b.TempDir(), benchRecords, tc.checkpoint)
			c := clock.NewFake(desktest.At("2026-03-01T10:00:00Z"))
			bus := event.New()
			defer bus.Close()
			warm := benchRouter(b, dir, c, bus)
			if _, err := warm.RestoreSession(b.Context()); err != nil {
				b.Fatal(err)
			}
			if err := warm.Close(); err != nil {
				b.Fatal(err)
			}
			routers := make([]*router.Router, 0, 64)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r := benchRouter(b, dir, c, bus)
				resumed, err := r.RestoreSession(b.Context())
				if err != nil || !resumed {
					b.Fatalf("RestoreSession = %v, %v", resumed, err)
				}
				if tc.firstUse {
					rep, err := r.Context("")
					if err != nil {
						b.Fatal(err)
					}
					if rep.Total == 0 {
						b.Fatal("Context: an empty request")
					}
				}
				if n := r.Exchanges(); n != benchRecords/2-1 && tc.checkpoint == 0 {
					b.Fatalf("Exchanges() = %d, want %d", n, benchRecords/2-1)
				}
				routers = append(routers, r)
			}
			b.StopTimer()
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(b.N), "retained-B/op")
			for _, r := range routers {
				_ = r.Close()
			}
			runtime.KeepAlive(routers)
		})
	}
}
