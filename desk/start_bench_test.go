package desk_test

// Many idle desks start at once (issue 24, item 4): an idle desk's start
// creates, writes and fsyncs only what it must, and the desks start in
// parallel.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deskd/deskd/memory/durable/faultfs"
)

// startOps is what TestIdleDeskStartTouchesLittle counts of a start.
var startOps = []faultfs.Op{faultfs.Create, faultfs.Sync, faultfs.Write, faultfs.Rename}

// TestIdleDeskStartTouchesLittle: idle desks' first start (no folder yet)
// and their restart (on the files a clean stop left) make no creation
// (file or folder), fsync, write or rename of a desk's, counted through
// faultfs: a first start names each desk's first session and writes
// nothing of it, neither the desk's folder, nor sessions/, nor the
// session's file, nor state.json (its first durable write makes them:
// TestIdleDeskFirstWrite), nor its ledger's file, which its first record
// makes; a restart writes nothing at all. The daemon makes desks/ once.
// (Before issue 24 item
// 4: 9 creations and 11 fsyncs a desk at the first start, then 4 and 6:
// the desk's folder, sessions/, the first session's file and state.json.)
func TestIdleDeskStartTouchesLittle(t *testing.T) {
	const idle = 20
	limits := map[string]map[faultfs.Op]int{
		"first start":  {faultfs.Create: 1, faultfs.Sync: 0, faultfs.Write: 0, faultfs.Rename: 0}, // desks/
		"second start": {faultfs.Create: 0, faultfs.Sync: 0, faultfs.Write: 0, faultfs.Rename: 0},
	}
	dir := idleFleet(t, idle)
	for _, run := range []string{"first start", "second start"} {
		// Everything under the state folder's desks/ (desks/ itself
		// included: once a daemon, its creation; the fsync of state/
		// that makes it durable is not under it).
		fsys := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
		r := runIdle(t, dir, fsys)
		if got := len(r.d.Set().Names()); got != idle {
			t.Fatalf("%s: %d desks run, want %d", run, got, idle)
		}
		for _, op := range startOps {
			if got, want := fsys.Count(op), limits[run][op]; got != want {
				t.Errorf("%s: %d idle desks made %d %s operations in all, want %d", run, idle, got, op, want)
			}
		}
		r.stopCleanly(t)
		entries, err := os.ReadDir(filepath.Join(dir, "state", "desks"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("%s: idle desks left %s in desks/, want nothing", run, e.Name())
		}
	}
}

// BenchmarkIdleDesksStart: how long n idle desks take from NewDaemon to
// every desk started (Ready), on deskd's fake clock: their first start
// (no folder yet) and a restart on the files a clean stop left. For the
// 10,000 figures of BENCHMARKS.md:
//
//	go test -run '^$' -bench 'BenchmarkIdleDesksStart/.*/10000' -benchtime 1x ./desk
func BenchmarkIdleDesksStart(b *testing.B) {
	forIdleFleets(b, func(b *testing.B, n int, again bool) {
		dir := idleFleet(b, n)
		if again {
			runIdle(b, dir, nil).stopCleanly(b) // the first start: the folders and ledgers
		}
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			if !again {
				if err := os.RemoveAll(filepath.Join(dir, "state")); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			r := runIdle(b, dir, nil)
			b.StopTimer()
			r.stopCleanly(b)
		}
	})
}
